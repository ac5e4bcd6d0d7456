package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/alerts"
	"github.com/redrive/redrive/ops/lease"
)

// NotifyState reads every alert and, for the firing ones, the newest firing notification of their
// current episode per channel. Errors are ops.ErrUnavailable.
func (s *Alerts) NotifyState(ctx context.Context) ([]alerts.Alert, []alerts.Sent, error) {
	rows, err := s.pool.Query(ctx, `SELECT key, kind, severity, title, summary, link, labels, since, episode, firing,
		fired_at, resolved_at FROM notify_alert ORDER BY key`)
	if err != nil {
		return nil, nil, unavailable(err, "notify state")
	}
	state, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (alerts.Alert, error) {
		var a alerts.Alert
		return a, r.Scan(&a.Key, &a.Kind, &a.Severity, &a.Title, &a.Summary, &a.Link, &a.Labels, &a.Since, &a.Episode,
			&a.Firing, &a.FiredAt, &a.ResolvedAt)
	})
	if err != nil {
		return nil, nil, unavailable(err, "notify state")
	}
	rows, err = s.pool.Query(ctx, `SELECT n.alert_key, n.channel, max(n.seq), max(n.created_at)
		FROM notification n JOIN notify_alert a ON a.key = n.alert_key AND a.episode = n.episode
		WHERE n.state = 'firing' AND a.firing GROUP BY 1, 2`)
	if err != nil {
		return nil, nil, unavailable(err, "notify state")
	}
	sent, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (alerts.Sent, error) {
		var x alerts.Sent
		return x, r.Scan(&x.Key, &x.Channel, &x.Seq, &x.At)
	})
	if err != nil {
		return nil, nil, unavailable(err, "notify state")
	}
	return state, sent, nil
}

// WriteNotifyRound stores r in one transaction fenced by l (see WriteSample): a notifier that lost
// its lease gets lease.ErrFenced and writes nothing. A notification already recorded (same key,
// episode, state, seq and channel) is not recorded twice.
func (s *Alerts) WriteNotifyRound(ctx context.Context, l lease.Lease, r alerts.Round) error {
	err := fencedTx(ctx, s.pool, l, true, func(tx pgx.Tx) error {
		for _, a := range r.Alerts {
			labels := a.Labels
			if labels == nil {
				labels = map[string]string{}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO notify_alert (key, kind, severity, title, summary, link, labels, since,
					episode, firing, fired_at, resolved_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
				ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, severity = excluded.severity, title = excluded.title,
					summary = excluded.summary, link = excluded.link, labels = excluded.labels, since = excluded.since,
					episode = excluded.episode, firing = excluded.firing, fired_at = excluded.fired_at,
					resolved_at = excluded.resolved_at`,
				a.Key, a.Kind, a.Severity, ops.CleanText(a.Title, 4096), ops.CleanText(a.Summary, 4096), a.Link, labels,
				a.Since, a.Episode, a.Firing, a.FiredAt, a.ResolvedAt); err != nil {
				return unavailable(err, "alert %s", a.Key)
			}
		}
		for _, n := range r.Notifications {
			if err := insertNotification(ctx, tx, n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("notify round (token %d): %w", l.Token, err)
	}
	return nil
}

// RecordNotification records one notification outside a round (a test notification) and returns
// its ID. Errors are ops.ErrUnavailable.
func (s *Alerts) RecordNotification(ctx context.Context, n alerts.NewNotification) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO notification (alert_key, episode, state, seq, channel, event)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, n.Key, n.Episode, n.State, n.Seq, n.Channel, []byte(n.Event)).Scan(&id)
	if err != nil {
		return 0, unavailable(err, "notification %s: record", n.Key)
	}
	return id, nil
}

func insertNotification(ctx context.Context, tx pgx.Tx, n alerts.NewNotification) error {
	if _, err := tx.Exec(ctx, `INSERT INTO notification (alert_key, episode, state, seq, channel, event)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, n.Key, n.Episode, n.State, n.Seq, n.Channel, []byte(n.Event)); err != nil {
		return unavailable(err, "notification %s", n.Key)
	}
	return nil
}

// DueNotifications lists up to limit undelivered notifications whose next attempt is due, oldest
// first. Errors are ops.ErrUnavailable.
func (s *Alerts) DueNotifications(ctx context.Context, limit int) ([]alerts.Notification, error) {
	return s.notifications(ctx, `WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now() ORDER BY id LIMIT $1`, limit)
}

// Notifications lists the newest limit notifications, newest first (the delivery log).
func (s *Alerts) Notifications(ctx context.Context, limit int) ([]alerts.Notification, error) {
	return s.notifications(ctx, `ORDER BY id DESC LIMIT $1`, limit)
}

func (s *Alerts) notifications(ctx context.Context, where string, args ...any) ([]alerts.Notification, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, alert_key, episode, state, seq, channel, event, created_at, attempts,
		next_attempt_at, delivered_at, failed_at, last_error FROM notification `+where, args...)
	if err != nil {
		return nil, unavailable(err, "notifications")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (alerts.Notification, error) {
		var n alerts.Notification
		return n, r.Scan(&n.ID, &n.Key, &n.Episode, &n.State, &n.Seq, &n.Channel, &n.Event, &n.CreatedAt, &n.Attempts,
			&n.NextAttemptAt, &n.DeliveredAt, &n.FailedAt, &n.LastError)
	})
	if err != nil {
		return nil, unavailable(err, "notifications")
	}
	return out, nil
}

// ClaimNotification takes notification id for one attempt: it counts the attempt and moves the
// next one retry later, so that nobody else sends it meanwhile and a sender that dies leaves it to
// the next attempt. l fences the claim (nil: unfenced, for a test notification). It reports false
// when the notification is delivered, given up, not due, or l is not current.
func (s *Alerts) ClaimNotification(ctx context.Context, l *lease.Lease, id int64, retry time.Duration) (int, bool, error) {
	var attempts int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if l != nil {
			if err := fence(ctx, tx, *l, true); err != nil {
				return err
			}
		}
		return tx.QueryRow(ctx, `UPDATE notification SET attempts = attempts + 1, next_attempt_at = now() + $2::interval
			WHERE id = $1 AND delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
			RETURNING attempts`, id, retry).Scan(&attempts)
	})
	switch {
	case isNoRows(err), errors.Is(err, lease.ErrFenced):
		return 0, false, nil
	case err != nil:
		return 0, false, unavailable(err, "notification %d: claim", id)
	}
	return attempts, true, nil
}

// SettleNotification records an attempt's outcome: sendErr nil marks it delivered; otherwise the
// error is kept and, when giveUp, the notification is given up. Unfenced: a send that happened
// must be recorded, whoever leads now.
func (s *Alerts) SettleNotification(ctx context.Context, id int64, sendErr error, giveUp bool) error {
	var err error
	if sendErr == nil {
		_, err = s.pool.Exec(ctx, `UPDATE notification SET delivered_at = now(), last_error = '' WHERE id = $1 AND delivered_at IS NULL`, id)
	} else {
		_, err = s.pool.Exec(ctx, `UPDATE notification SET last_error = $2,
			failed_at = CASE WHEN $3 THEN now() ELSE failed_at END WHERE id = $1 AND delivered_at IS NULL`,
			id, ops.CleanText(sendErr.Error(), 2048), giveUp)
	}
	if err != nil {
		return unavailable(err, "notification %d: settle", id)
	}
	return nil
}

// CreateSilence stores a silence and returns it with its ID and creation time. x is one
// alerts.SilenceRequest.Silence checked (text PostgreSQL can hold, a comment within bounds): the
// cuts here are a backstop, not a rule. Errors are ops.ErrUnavailable.
func (s *Alerts) CreateSilence(ctx context.Context, x alerts.Silence) (alerts.Silence, error) {
	if x.Matchers == nil {
		x.Matchers = map[string]string{}
	}
	err := s.pool.QueryRow(ctx, `INSERT INTO notify_silence (matchers, ends_at, comment, created_by) VALUES ($1, $2, $3, $4)
		RETURNING id, created_at`, x.Matchers, x.EndsAt, ops.CleanText(x.Comment, 4096), ops.CleanText(x.CreatedBy, 256)).Scan(&x.ID, &x.CreatedAt)
	if err != nil {
		return x, unavailable(err, "silence: create")
	}
	return x, nil
}

const silenceColumns = `id, matchers, ends_at, comment, created_by, created_at`

func scanSilence(r pgx.Row) (alerts.Silence, error) {
	var x alerts.Silence
	return x, r.Scan(&x.ID, &x.Matchers, &x.EndsAt, &x.Comment, &x.CreatedBy, &x.CreatedAt)
}

// Silences lists the silences that have not ended, soonest end first.
func (s *Alerts) Silences(ctx context.Context) ([]alerts.Silence, error) {
	return collect(ctx, s.pool, func(r pgx.CollectableRow) (alerts.Silence, error) { return scanSilence(r) }, "silences",
		`SELECT `+silenceColumns+` FROM notify_silence WHERE ends_at > now() ORDER BY ends_at, id`)
}

// Silence reads silence id, ended or not. ops.ErrNotFound when there is none; else errors are
// ops.ErrUnavailable.
func (s *Alerts) Silence(ctx context.Context, id int64) (alerts.Silence, error) {
	return s.oneSilence(ctx, id, "read", `SELECT `+silenceColumns+` FROM notify_silence WHERE id = $1`)
}

// EndSilence ends silence id now and returns it as it stands after. A silence that had ended is
// left as it was (ending is idempotent: its ends_at stays the time it ended). ops.ErrNotFound when
// there is none; else errors are ops.ErrUnavailable.
func (s *Alerts) EndSilence(ctx context.Context, id int64) (alerts.Silence, error) {
	return s.oneSilence(ctx, id, "end", `UPDATE notify_silence SET ends_at = least(ends_at, now()) WHERE id = $1
		RETURNING `+silenceColumns)
}

// oneSilence runs sql, which returns the silence id's columns, or no row when it does not exist.
func (s *Alerts) oneSilence(ctx context.Context, id int64, what, sql string) (alerts.Silence, error) {
	x, err := scanSilence(s.pool.QueryRow(ctx, sql, id))
	switch {
	case isNoRows(err):
		return x, ops.NotFound("silence %d does not exist", id)
	case err != nil:
		return x, unavailable(err, "silence %d: %s", id, what)
	}
	return x, nil
}
