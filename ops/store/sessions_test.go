package store_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/store"
)

// age moves a session's times back by d, as if d had passed: the expiry rules run on the
// database's clock, and waiting on it would make the test slow and its margins flaky.
func age(tb testing.TB, dsn string, tok [32]byte, d time.Duration) {
	tb.Helper()
	pgtest.Exec(tb, dsn, `UPDATE `+store.Schema+`.session SET created_at = created_at - $2::interval, last_seen_at = last_seen_at - $2::interval,
		idle_expires_at = idle_expires_at - $2::interval, expires_at = expires_at - $2::interval WHERE token_sha256 = $1`, tok[:], d)
}

// newSession creates a session of user with role whose token is the SHA-256 of secret, and returns
// that hash.
func newSession(tb testing.TB, st *store.Store, secret, user, role string, idle, absolute time.Duration) [32]byte {
	tb.Helper()
	tok := sha256.Sum256([]byte(secret))
	if _, err := st.CreateSession(context.Background(), tok[:], user, role, idle, absolute); err != nil {
		tb.Fatal(err)
	}
	return tok
}

func TestSessions(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	tok := sha256.Sum256([]byte("token"))

	created, err := st.CreateSession(ctx, tok[:], "alice", "operator", time.Minute, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := created.ExpiresAt.Sub(created.IdleExpiresAt); got < 119*time.Second || got > 121*time.Second {
		t.Errorf("idle expiry %v before the absolute one, want 2m", got)
	}

	t.Run("Read", func(t *testing.T) {
		s, err := st.TouchSession(ctx, tok[:], time.Minute, time.Hour)
		if err != nil || s.User != "alice" || s.Role != "operator" {
			t.Fatalf("%+v %v", s, err)
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		other := sha256.Sum256([]byte("other"))
		if _, err := st.TouchSession(ctx, other[:], time.Minute, 0); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("unknown token: %v", err)
		}
	})
	t.Run("IdleIsExtendedByUseButNotPastAbsolute", func(t *testing.T) {
		// Used every 40 s of a 60 s idle timeout, the session lives to its absolute expiry (3 min)
		// and not a moment past it.
		for lived := 40 * time.Second; lived < 3*time.Minute; lived += 40 * time.Second {
			age(t, dsn, tok, 40*time.Second)
			s, err := st.TouchSession(ctx, tok[:], time.Minute, 0)
			if err != nil {
				t.Fatalf("used every 40s, the session ended after %v, before its absolute expiry: %v", lived, err)
			}
			if s.IdleExpiresAt.After(s.ExpiresAt) {
				t.Fatalf("idle expiry %v past the absolute %v", s.IdleExpiresAt, s.ExpiresAt)
			}
			if left := time.Until(s.ExpiresAt); left < 3*time.Minute-lived-2*time.Second || left > 3*time.Minute-lived+2*time.Second {
				t.Fatalf("after %v the absolute expiry is %v away, want %v: use must not move it", lived, left, 3*time.Minute-lived)
			}
		}
		age(t, dsn, tok, 40*time.Second) // 200 s: past the absolute expiry, though used 40 s ago
		if _, err := st.TouchSession(ctx, tok[:], time.Minute, 0); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("past the absolute expiry: %v", err)
		}
	})
	t.Run("IdleExpiry", func(t *testing.T) {
		tok2 := newSession(t, st, "idle", "bob", "viewer", time.Minute, time.Hour)
		age(t, dsn, tok2, 59*time.Second)
		if _, err := st.TouchSession(ctx, tok2[:], time.Minute, time.Hour); err != nil {
			t.Fatalf("idle 59s of 60s: %v", err)
		}
		age(t, dsn, tok2, 2*time.Second)
		if _, err := st.TouchSession(ctx, tok2[:], time.Minute, 0); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("idle session still live: %v", err)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		tok3 := newSession(t, st, "bye", "carol", "admin", time.Hour, time.Hour)
		if err := st.DeleteSession(ctx, tok3[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := st.TouchSession(ctx, tok3[:], time.Hour, 0); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("deleted session still live: %v", err)
		}
		if err := st.DeleteSession(ctx, tok3[:]); err != nil {
			t.Fatalf("deleting twice: %v", err)
		}
	})
}
