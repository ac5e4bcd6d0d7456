package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/pgpool"
	"github.com/redrive/redrive/ops/replay"
)

// planWriter stores a plan as it is made: items go in chunks (COPY), each chunk committed on its
// own, and the header last, in one statement that makes the plan ready. No transaction is held
// while the selection is read: a plan of a million messages takes minutes, and a connection held
// that long while the plan also asks the pool (ledger look-ups, progress) deadlocked a busy pool
// once. A plan that is not ready is never run, so its items are never read before they are all in.
type planWriter struct {
	pool      *pgpool.Pool
	id        string
	committed bool
}

// BeginPlan starts writing plan id.
func (s *ReplayPlans) BeginPlan(ctx context.Context, id string) (replay.PlanWriter, error) {
	return &planWriter{pool: s.pool, id: id}, nil
}

// Add copies a chunk of items while the plan is planning (or has no header yet: a plan written
// whole); one that ended meanwhile is an ops.ErrConflict and stores nothing. The chunk holds the
// header (FOR SHARE) until it commits, so a cancel or failure (EndPlanning) waits for it and its
// delete sees every row: read committed, a delete beside an uncommitted COPY missed the chunk,
// which then committed into a cancelled plan.
func (w *planWriter) Add(ctx context.Context, items []replay.StoredItem) error {
	ended := false
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var state string
		err := tx.QueryRow(ctx, `SELECT state FROM replay_plan WHERE id = $1 FOR SHARE`, w.id).Scan(&state)
		if err != nil && !isNoRows(err) {
			return err
		}
		if ended = err == nil && state != replay.PlanPlanning; ended {
			return nil
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"replay_plan_item"},
			[]string{"plan_id", "seq", "locator", "message_id", "consumer", "destination", "inbox", "action", "error_group", "replay_count", "position", "partition", "note"},
			pgx.CopyFromSlice(len(items), func(i int) ([]any, error) {
				it := items[i]
				return []any{w.id, it.Seq, it.Locator, it.MessageID, it.Consumer, it.Destination, it.Inbox, it.Action,
					it.ErrorGroup, it.ReplayCount, it.Position, it.Partition, it.Note}, nil
			}))
		return err
	})
	if err != nil {
		return unavailable(err, "save plan items")
	}
	if ended {
		return ops.Conflict("replay plan %s is no longer being planned (it was cancelled)", w.id)
	}
	return nil
}

// Commit writes the header, ready: over the planning header StartPlanning wrote (only while it is
// still planning), or as a new row. A plan cancelled meanwhile is an ops.ErrConflict.
func (w *planWriter) Commit(ctx context.Context, p replay.StoredPlan) error {
	actions, _ := json.Marshal(p.Actions)
	warnings, _ := json.Marshal(p.Warnings)
	if p.Warnings == nil {
		warnings = []byte("[]")
	}
	filter := p.Filter
	if filter == nil {
		filter = json.RawMessage("{}")
	}
	groups, _ := json.Marshal(p.ErrorGroups)
	if p.ErrorGroups == nil {
		groups = []byte("{}")
	}
	tag, err := w.pool.Exec(ctx, `INSERT INTO replay_plan (id, actor, source, filter, total, actions, warnings, error_groups,
			state, planned, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'ready', $5, now())
		ON CONFLICT (id) DO UPDATE SET source = EXCLUDED.source, filter = EXCLUDED.filter, total = EXCLUDED.total,
			actions = EXCLUDED.actions, warnings = EXCLUDED.warnings, error_groups = EXCLUDED.error_groups,
			state = 'ready', planned = EXCLUDED.total, finished_at = now(), heartbeat = now()
		WHERE replay_plan.state = 'planning'`, w.id, p.Actor, p.Source, filter, p.Total, actions, warnings, groups)
	if err != nil {
		return unavailable(err, "save plan")
	}
	if tag.RowsAffected() == 0 {
		return ops.Conflict("replay plan %s is no longer being planned (it was cancelled)", w.id)
	}
	w.committed = true
	return nil
}

// Rollback drops the items of a plan that was not committed; after Commit it does nothing. A
// Commit whose answer was lost (its context cancelled, the connection dropped) may still have made
// the plan ready in the store: the header's row is locked first, so a commit still under way is
// waited for, and a ready plan keeps its items — dropped, it would read ready with none to run.
func (w *planWriter) Rollback(ctx context.Context) {
	if w.committed {
		return
	}
	ctx = context.WithoutCancel(ctx)
	_ = pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var state string
		if err := tx.QueryRow(ctx, `SELECT state FROM replay_plan WHERE id = $1 FOR UPDATE`, w.id).Scan(&state); err != nil && !isNoRows(err) {
			return err
		}
		if state == replay.PlanReady {
			return nil
		}
		_, err := tx.Exec(ctx, `DELETE FROM replay_plan_item WHERE plan_id = $1`, w.id)
		return err
	})
}

// Plan reads a plan's header. Unknown id → ops.ErrNotFound.
func (s *ReplayPlans) Plan(ctx context.Context, id string) (replay.StoredPlan, error) {
	var p replay.StoredPlan
	var actions, warnings, groups []byte
	err := s.pool.QueryRow(ctx, `SELECT id, created_at, actor, source, filter, total, actions, warnings, error_groups,
			state, planned, estimate, error, owner, heartbeat, finished_at
		FROM replay_plan WHERE id = $1`, id).Scan(&p.ID, &p.CreatedAt, &p.Actor, &p.Source, &p.Filter, &p.Total, &actions, &warnings, &groups,
		&p.State, &p.Planned, &p.Estimate, &p.Error, &p.Owner, &p.Heartbeat, &p.FinishedAt)
	if isNoRows(err) {
		return p, ops.NotFound("replay plan %q not found", ops.Echo(id))
	}
	if err != nil {
		return p, unavailable(err, "replay plan %q", id)
	}
	_ = json.Unmarshal(actions, &p.Actions)
	_ = json.Unmarshal(warnings, &p.Warnings)
	_ = json.Unmarshal(groups, &p.ErrorGroups)
	return p, nil
}

// PlanItems reads up to limit items with seq ≥ from, in seq order.
func (s *ReplayPlans) PlanItems(ctx context.Context, planID string, from, limit int) ([]replay.StoredItem, error) {
	// destination as text: scanning jsonb into json.RawMessage validates it, for nothing.
	rows, err := s.pool.Query(ctx, `SELECT seq, locator, message_id, consumer, destination::text, inbox, action, error_group,
			replay_count, position, partition, note
		FROM replay_plan_item WHERE plan_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`, planID, from, limit)
	if err != nil {
		return nil, unavailable(err, "plan items")
	}
	return collectPlanItems(rows)
}

func collectPlanItems(rows pgx.Rows) ([]replay.StoredItem, error) {
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (replay.StoredItem, error) {
		var it replay.StoredItem
		var dest []byte
		err := r.Scan(&it.Seq, &it.Locator, &it.MessageID, &it.Consumer, &dest, &it.Inbox, &it.Action,
			&it.ErrorGroup, &it.ReplayCount, &it.Position, &it.Partition, &it.Note)
		it.Destination = dest
		return it, err
	})
	if err != nil {
		return nil, fmt.Errorf("plan items: %w", err)
	}
	return items, nil
}

// PlanItemsByLocator reads the items of a plan with these locators (RabbitMQ and outbox items:
// Kafka items are found by seq).
func (s *ReplayPlans) PlanItemsByLocator(ctx context.Context, planID string, locators []string) ([]replay.StoredItem, error) {
	rows, err := s.pool.Query(ctx, planItemsByLocatorSQL, planID, locators)
	if err != nil {
		return nil, unavailable(err, "plan items")
	}
	return collectPlanItems(rows)
}

const planItemsByLocatorSQL = `SELECT seq, locator, message_id, consumer, destination::text, inbox, action, error_group,
		replay_count, position, partition, note
	FROM replay_plan_item WHERE plan_id = $1 AND locator = ANY($2) AND partition IS NULL`

// AnalyzePlanItems refreshes the planner's statistics of the plan items. A job that looks its
// items up by locator runs right after its plan was copied in, long before autovacuum analyzes
// the table; without statistics PostgreSQL reads the whole plan by its primary key for every batch.
// Only the columns PlanItemsByLocator's conditions name are analyzed (and the table's size, which
// every ANALYZE counts): the wide ones (destination, note) were half its time.
func (s *ReplayPlans) AnalyzePlanItems(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `ANALYZE replay_plan_item (plan_id, locator, partition)`); err != nil {
		return unavailable(err, "analyze plan items")
	}
	return nil
}

// ReplayedLocators returns, for each of the locators a job holds, the ledger's outcome of it:
// replay.LedgerActive (in flight) or replay.LedgerPublished (its broker confirmed it).
func (w *planWriter) ReplayedLocators(ctx context.Context, locators []string) (map[string]string, error) {
	rows, err := w.pool.Query(ctx, `SELECT locator, outcome FROM replay_ledger
		WHERE holds AND locator = ANY($1)`, locators)
	if err != nil {
		return nil, unavailable(err, "ledger lookup")
	}
	out := make(map[string]string, len(locators)/8)
	var locator, outcome string
	_, err = pgx.ForEachRow(rows, []any{&locator, &outcome}, func() error {
		out[locator] = outcome
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledger lookup: %w", err)
	}
	return out, nil
}

// PlanRoutes reads the route of each of the plans planIDs, sampling the first sample items of
// each for its destinations. A plan that does not exist is absent from the map.
// Errors: ops.ErrUnavailable when the store cannot be read.
func (s *ReplayPlans) PlanRoutes(ctx context.Context, planIDs []string, sample int) (map[string]replay.PlanRoute, error) {
	out := make(map[string]replay.PlanRoute, len(planIDs))
	if len(planIDs) == 0 {
		return out, nil
	}
	// The sample is read by the primary key (plan_id, seq); the partition is dropped so that a
	// Kafka plan over 12 partitions of one topic shows one destination.
	rows, err := s.pool.Query(ctx, `SELECT p.id, p.source::text, d.dest FROM replay_plan p
		LEFT JOIN LATERAL (
			SELECT DISTINCT (i.destination - 'partition' - 'partition_source')::text AS dest
			FROM (SELECT destination FROM replay_plan_item WHERE plan_id = p.id ORDER BY seq LIMIT $2) i
			WHERE i.destination ->> 'kind' <> '') d ON true
		WHERE p.id = ANY($1) ORDER BY p.id, d.dest`, planIDs, sample)
	if err != nil {
		return nil, unavailable(err, "plan routes")
	}
	var id, source string
	var dest *string
	if _, err := pgx.ForEachRow(rows, []any{&id, &source, &dest}, func() error {
		r, ok := out[id]
		if !ok {
			r.Source = json.RawMessage(source)
		}
		if dest != nil {
			r.Destinations = append(r.Destinations, json.RawMessage(*dest))
		}
		out[id] = r
		return nil
	}); err != nil {
		return nil, unavailable(err, "plan routes")
	}
	return out, nil
}
