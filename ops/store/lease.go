package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/lease"
	"github.com/redrive/redrive/ops/pgpool"
)

// lockWait bounds how long a takeover waits for the lease row: a frozen leader's write holds it
// only until its transaction's timeouts end it (WriteSample), and the takeover is retried.
const lockWait = 200 * time.Millisecond

// AcquireSourceLease takes the lease of source for owner when nobody holds it (never leased, released,
// or past its expiry), incrementing its token, for ttl. It reports false (and no error) when
// another owner's lease is still valid — also when owner itself holds it: the holder renews with
// RenewSourceLease, keeping its token. Errors are ops.ErrUnavailable.
func (s *Leases) AcquireSourceLease(ctx context.Context, source, owner string, ttl time.Duration) (lease.Lease, bool, error) {
	l := lease.Lease{Source: source, Owner: owner, TTL: ttl}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, pgMillis(lockWait)); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO sampler_lease AS l (source, owner, token, expires_at, renewed_at)
			VALUES ($1, $2, 1, now() + $3::interval, now())
			ON CONFLICT (source) DO UPDATE
			SET owner = excluded.owner, token = l.token + 1, expires_at = excluded.expires_at, renewed_at = now()
			WHERE l.owner = '' OR l.expires_at <= now()
			RETURNING token, expires_at`, source, owner, ttl).Scan(&l.Token, &l.ExpiresAt)
	})
	switch {
	case isNoRows(err):
		return lease.Lease{}, false, nil
	case isLockTimeout(err):
		return lease.Lease{}, false, nil // the old holder is mid-write; next time
	case err != nil:
		return lease.Lease{}, false, unavailable(err, "lease %s: acquire", source)
	}
	return l, true, nil
}

// RenewSourceLease extends l by its TTL from now, keeping its token. It fails with lease.ErrFenced when the
// lease was taken over (its token is not current), and ops.ErrUnavailable when the store cannot be
// reached. A lease past its expiry that nobody took over is renewed.
func (s *Leases) RenewSourceLease(ctx context.Context, l lease.Lease) (lease.Lease, error) {
	err := s.pool.QueryRow(ctx, `UPDATE sampler_lease SET expires_at = now() + $4::interval, renewed_at = now()
		WHERE source = $1 AND owner = $2 AND token = $3 RETURNING expires_at`,
		l.Source, l.Owner, l.Token, l.TTL).Scan(&l.ExpiresAt)
	switch {
	case isNoRows(err):
		return lease.Lease{}, fmt.Errorf("lease %s: renew: %w", l.Source, lease.ErrFenced)
	case err != nil:
		return lease.Lease{}, unavailable(err, "lease %s: renew", l.Source)
	}
	return l, nil
}

// ReleaseSourceLease gives l up (a replica shutting down, or handing a source to a replica with fewer),
// so another replica may take it at once. Releasing a lease already taken over does nothing.
func (s *Leases) ReleaseSourceLease(ctx context.Context, l lease.Lease) error {
	_, err := s.pool.Exec(ctx, `UPDATE sampler_lease SET owner = '', expires_at = '-infinity', renewed_at = now()
		WHERE source = $1 AND owner = $2 AND token = $3`, l.Source, l.Owner, l.Token)
	if err != nil {
		return unavailable(err, "lease %s: release", l.Source)
	}
	return nil
}

// SourceLeases lists every source's lease, valid or not, ordered by source. Errors are ops.ErrUnavailable.
func (s *Leases) SourceLeases(ctx context.Context) ([]lease.State, error) {
	rows, err := s.pool.Query(ctx, `SELECT source, owner, token, nullif(expires_at, '-infinity'), renewed_at,
			owner <> '' AND expires_at > now()
		FROM sampler_lease ORDER BY source`)
	if err != nil {
		return nil, unavailable(err, "leases")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lease.State, error) {
		var l lease.State
		var exp *time.Time // NULL when released
		err := r.Scan(&l.Source, &l.Owner, &l.Token, &exp, &l.RenewedAt, &l.Valid)
		if exp != nil {
			l.ExpiresAt = *exp
		}
		return l, err
	})
	if err != nil {
		return nil, unavailable(err, "leases")
	}
	return out, nil
}

// WriteSample stores one sample in one transaction, fenced by l: it first locks l's row (shared)
// and checks that l's token is still the current one, so a takeover cannot commit between that
// check and the writes. A leader that was frozen and resumes gets lease.ErrFenced and stores nothing.
// The transaction gives up after half of l.TTL idle or in one statement, so a leader frozen
// mid-write does not hold the row, and with it the takeover, for long. A duplicate history row is
// ops.ErrConflict; a store that cannot be reached is ops.ErrUnavailable.
func (s *Leases) WriteSample(ctx context.Context, l lease.Lease, w history.SampleWrite) error {
	err := fencedTx(ctx, s.pool, l, false, func(tx pgx.Tx) error {
		var err error
		if w.Error != "" {
			err = setSnapshotError(ctx, tx, w.Kind, w.Name, w.Error, w.ErrorAt)
		} else {
			err = putSnapshot(ctx, tx, w.Snapshot)
		}
		if err != nil {
			return err
		}
		if err := insertKafkaGroupSamples(ctx, tx, w.Kafka); err != nil {
			return err
		}
		return insertRabbitQueueSamples(ctx, tx, w.Rabbit)
	})
	if err != nil {
		if !errors.Is(err, ops.ErrConflict) && !errors.Is(err, ops.ErrUnavailable) {
			err = fmt.Errorf("%w: %w", ops.ErrUnavailable, err) // the commit
		}
		return fmt.Errorf("sample %s (token %d): %w", l.Source, l.Token, err)
	}
	return nil
}

// fencedTx runs body in one transaction fenced by l: l's row is locked (shared) and its token
// checked first (live: and its expiry), so a takeover cannot commit between that check and the
// writes; lease.ErrFenced when it is not current. The transaction gives up after half of l.TTL
// idle or in one statement, so a holder frozen mid-write does not hold the row, and with it the
// takeover, for long.
func fencedTx(ctx context.Context, pool *pgpool.Pool, l lease.Lease, live bool, body func(tx pgx.Tx) error) error {
	hold := max(l.TTL/2, 100*time.Millisecond)
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('idle_in_transaction_session_timeout', $1, true),
			set_config('statement_timeout', $1, true)`, pgMillis(hold)); err != nil {
			return fmt.Errorf("%w: %w", ops.ErrUnavailable, err)
		}
		if err := fence(ctx, tx, l, live); err != nil {
			return err
		}
		return body(tx)
	})
}

// fence locks l's row (shared) and checks its token is current (live: and that it has not
// expired); lease.ErrFenced otherwise.
func fence(ctx context.Context, tx pgx.Tx, l lease.Lease, live bool) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM sampler_lease WHERE source = $1 AND owner = $2 AND token = $3
		AND (NOT $4 OR expires_at > now()) FOR SHARE`, l.Source, l.Owner, l.Token, live).Scan(&one)
	switch {
	case isNoRows(err):
		return lease.ErrFenced
	case err != nil:
		return fmt.Errorf("%w: %w", ops.ErrUnavailable, err)
	}
	return nil
}

// replicaForget is how long after its heartbeat expired a replica's row is deleted: long enough
// for /api/v1/replicas to show a replica that died, short enough that restarts do not pile up.
const replicaForget = time.Hour

// HeartbeatReplica records that replica id is alive for ttl from now, forgets replicas dead for an
// hour, and returns the IDs of the live replicas (this one included), sorted. Errors are
// ops.ErrUnavailable.
func (s *Leases) HeartbeatReplica(ctx context.Context, id string, ttl time.Duration) ([]string, error) {
	var live []string
	err := s.pool.QueryRow(ctx, `WITH up AS (
			INSERT INTO sampler_replica (id, heartbeat_at, expires_at) VALUES ($1, now(), now() + $2::interval)
			ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), expires_at = excluded.expires_at
		), gone AS (
			DELETE FROM sampler_replica WHERE id <> $1 AND expires_at < now() - $3::interval
		)
		SELECT array_append(ARRAY(SELECT id FROM sampler_replica WHERE id <> $1 AND expires_at > now()), $1::text)`,
		id, ttl, replicaForget).Scan(&live)
	if err != nil {
		return nil, unavailable(err, "replica %s: heartbeat", id)
	}
	slices.Sort(live)
	return live, nil
}

// RemoveReplica deletes replica id's row (a clean shutdown).
func (s *Leases) RemoveReplica(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM sampler_replica WHERE id = $1`, id); err != nil {
		return unavailable(err, "replica %s: remove", id)
	}
	return nil
}

// Replicas reads the lease.ReplicaView. Errors are ops.ErrUnavailable.
func (s *Leases) Replicas(ctx context.Context) (lease.ReplicaView, error) {
	var v lease.ReplicaView
	rows, err := s.pool.Query(ctx, `SELECT id, started_at, heartbeat_at, expires_at, expires_at > now()
		FROM sampler_replica ORDER BY id`)
	if err != nil {
		return v, unavailable(err, "replicas")
	}
	if v.Replicas, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (lease.Replica, error) {
		var x lease.Replica
		return x, r.Scan(&x.ID, &x.StartedAt, &x.HeartbeatAt, &x.ExpiresAt, &x.Live)
	}); err != nil {
		return v, unavailable(err, "replicas")
	}
	if v.Leases, err = s.SourceLeases(ctx); err != nil {
		return v, err
	}
	rows, err = s.pool.Query(ctx, `SELECT id, status, lease_owner, lease_until FROM replay_job
		WHERE lease_owner IS NOT NULL AND lease_owner <> '' AND status IN ('pending', 'running')
		ORDER BY lease_owner, created_at`)
	if err != nil {
		return v, unavailable(err, "replicas: jobs")
	}
	if v.Jobs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (lease.ReplicaJob, error) {
		var j lease.ReplicaJob
		var until *time.Time
		err := r.Scan(&j.ID, &j.Status, &j.Owner, &until)
		if until != nil {
			j.LeaseUntil = *until
		}
		return j, err
	}); err != nil {
		return v, unavailable(err, "replicas: jobs")
	}
	return v, nil
}

// pgMillis renders d for set_config, which takes text: "250ms".
func pgMillis(d time.Duration) string { return fmt.Sprintf("%dms", max(d.Milliseconds(), 1)) }

// isLockTimeout reports PostgreSQL's lock_not_available (lock_timeout expired).
func isLockTimeout(err error) bool {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pgErr.Code == "55P03"
}
