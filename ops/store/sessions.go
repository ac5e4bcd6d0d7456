package store

import (
	"context"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
)

// CreateSession stores a new session that ends after idle without use, or after absolute.
// Expired sessions are deleted on the way, so the table holds only live ones.
func (s *Sessions) CreateSession(ctx context.Context, tokenSHA256 []byte, user, role string, idle, absolute time.Duration) (access.Session, error) {
	if len(tokenSHA256) != 32 || user == "" || idle <= 0 || absolute <= 0 {
		return access.Session{}, ops.Invalid("session", "needs a 32-byte token hash, a user and positive timeouts")
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM session WHERE idle_expires_at < now()`); err != nil {
		return access.Session{}, unavailable(err, "session: delete expired")
	}
	sess := access.Session{User: user, Role: role}
	err := s.pool.QueryRow(ctx, `INSERT INTO session (token_sha256, user_name, role, idle_expires_at, expires_at)
		VALUES ($1, $2, $3, now() + least($4::interval, $5::interval), now() + $5::interval)
		RETURNING created_at, idle_expires_at, expires_at`,
		tokenSHA256, user, role, idle, absolute).Scan(&sess.CreatedAt, &sess.IdleExpiresAt, &sess.ExpiresAt)
	if err != nil {
		return access.Session{}, unavailable(err, "session: create")
	}
	return sess, nil
}

// TouchSession returns the live session with this token hash and, when it was last used more than
// touchAfter ago, pushes its idle expiry to now + idle (never past its absolute expiry). Throttling
// the write keeps a page that polls every few seconds from updating the row on every request.
// A missing or expired session is ops.ErrNotFound.
func (s *Sessions) TouchSession(ctx context.Context, tokenSHA256 []byte, idle, touchAfter time.Duration) (access.Session, error) {
	var sess access.Session
	err := s.pool.QueryRow(ctx, `
		WITH live AS (
			SELECT token_sha256, user_name, role, created_at, idle_expires_at, expires_at, last_seen_at
			FROM session
			WHERE token_sha256 = $1 AND idle_expires_at > now() AND expires_at > now()
		), touched AS (
			UPDATE session SET last_seen_at = now(), idle_expires_at = least(now() + $2::interval, session.expires_at)
			FROM live
			WHERE session.token_sha256 = live.token_sha256 AND live.last_seen_at < now() - $3::interval
			RETURNING session.idle_expires_at
		)
		SELECT live.user_name, live.role, live.created_at,
			coalesce((SELECT idle_expires_at FROM touched), live.idle_expires_at), live.expires_at
		FROM live`,
		tokenSHA256, idle, touchAfter).Scan(&sess.User, &sess.Role, &sess.CreatedAt, &sess.IdleExpiresAt, &sess.ExpiresAt)
	switch {
	case isNoRows(err):
		return access.Session{}, ops.NotFound("no such session, or it expired")
	case err != nil:
		return access.Session{}, unavailable(err, "session: read")
	}
	return sess, nil
}

// DeleteSession ends a session (sign-out). Deleting one that does not exist is not an error.
func (s *Sessions) DeleteSession(ctx context.Context, tokenSHA256 []byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM session WHERE token_sha256 = $1`, tokenSHA256); err != nil {
		return unavailable(err, "session: delete")
	}
	return nil
}
