package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/replay"
)

// planWriter stores a plan as it is made: items go in chunks (COPY) and the header last, all in
// one transaction, so a plan is visible whole or not at all and its items never sit in memory.
type planWriter struct {
	tx pgx.Tx
	id string
}

// BeginPlan opens the transaction of plan id.
func (s *ReplayPlans) BeginPlan(ctx context.Context, id string) (replay.PlanWriter, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, unavailable(err, "save plan")
	}
	return &planWriter{tx: tx, id: id}, nil
}

// Add copies a chunk of items.
func (w *planWriter) Add(ctx context.Context, items []replay.StoredItem) error {
	_, err := w.tx.CopyFrom(ctx, pgx.Identifier{"replay_plan_item"},
		[]string{"plan_id", "seq", "locator", "message_id", "consumer", "destination", "inbox", "action", "error_group", "replay_count", "position", "partition", "note"},
		pgx.CopyFromSlice(len(items), func(i int) ([]any, error) {
			it := items[i]
			return []any{w.id, it.Seq, it.Locator, it.MessageID, it.Consumer, it.Destination, it.Inbox, it.Action,
				it.ErrorGroup, it.ReplayCount, it.Position, it.Partition, it.Note}, nil
		}))
	if err != nil {
		return unavailable(err, "save plan items")
	}
	return nil
}

// Commit writes the header and commits.
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
	if _, err := w.tx.Exec(ctx, `INSERT INTO replay_plan (id, actor, source, filter, total, actions, warnings, error_groups)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, w.id, p.Actor, p.Source, filter, p.Total, actions, warnings, groups); err != nil {
		return unavailable(err, "save plan")
	}
	if err := w.tx.Commit(ctx); err != nil {
		return unavailable(err, "save plan")
	}
	return nil
}

// Rollback abandons the plan; after Commit it does nothing.
func (w *planWriter) Rollback(ctx context.Context) { _ = w.tx.Rollback(context.WithoutCancel(ctx)) }

// Plan reads a plan's header. Unknown id → ops.ErrNotFound.
func (s *ReplayPlans) Plan(ctx context.Context, id string) (replay.StoredPlan, error) {
	var p replay.StoredPlan
	var actions, warnings, groups []byte
	err := s.pool.QueryRow(ctx, `SELECT id, created_at, actor, source, filter, total, actions, warnings, error_groups
		FROM replay_plan WHERE id = $1`, id).Scan(&p.ID, &p.CreatedAt, &p.Actor, &p.Source, &p.Filter, &p.Total, &actions, &warnings, &groups)
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
	rows, err := s.pool.Query(ctx, `SELECT seq, locator, message_id, consumer, destination::text, inbox, action, error_group,
			replay_count, position, partition, note
		FROM replay_plan_item WHERE plan_id = $1 AND locator = ANY($2) AND partition IS NULL`, planID, locators)
	if err != nil {
		return nil, unavailable(err, "plan items")
	}
	return collectPlanItems(rows)
}

// AnalyzePlanItems refreshes the planner's statistics of the plan items. A job that looks its
// items up by locator runs right after its plan was copied in, long before autovacuum analyzes
// the table; without statistics PostgreSQL reads the whole plan by its primary key for every batch.
func (s *ReplayPlans) AnalyzePlanItems(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `ANALYZE replay_plan_item`); err != nil {
		return unavailable(err, "analyze plan items")
	}
	return nil
}

// ReplayedLocators returns, for each of the locators a job holds, the ledger's outcome of it:
// replay.LedgerActive (in flight) or replay.LedgerPublished (its broker confirmed it). It reads
// on the plan's own transaction: a plan that waited for a second pooled connection while holding
// one deadlocked the pool once as many plans ran as it had connections.
func (w *planWriter) ReplayedLocators(ctx context.Context, locators []string) (map[string]string, error) {
	rows, err := w.tx.Query(ctx, `SELECT locator, outcome FROM replay_ledger
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
