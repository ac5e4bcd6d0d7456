package pgoutbox

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/outbox"
)

// queries holds the SQL for one table, built once from the configured (validated) identifiers.
// Columns are cast in SELECT lists only (never in WHERE) so that the status index stays usable.
// Id parameters are cast to bigint: against an integer (SERIAL) id, pgx would prepare them as int4
// and fail, in the client, on an id above 2^31-1.
type queries struct {
	ping             string
	count            map[outbox.Status]string // count(*) of one state: literal, so each plan is an index-only scan
	readyAgeAndStuck string
	estimate         string
	selectEvent      string // column list + FROM, for list and detail
	release          string // $1: ids (NULL = every stuck row), $2: batch size
	requeue          string // $1: ids, $2: the event_id each must hold (NULL: any)
	requeueReset     string // as requeue; also resets attempts
	deaths           string // $1: ids; those DEAD: id, event_id, available_at
	// columns, quoted, for building filters
	id, eventID, eventType, aggregateID, status, lockedUntil, createdAt, payload string
}

// requeue is the requeue statement; its arguments are the table, its id, status and event_id
// columns, and what else it sets. With $2, a row moves only while it holds the event_id at the same
// place: a row id is reused after TRUNCATE … RESTART IDENTITY or a recreated table.
const requeue = `WITH dead AS (
		SELECT %[2]s FROM %[1]s WHERE %[2]s = ANY($1::bigint[]) AND %[3]s IN ('DEAD','FAILED')
			AND ($2::text[] IS NULL OR (%[2]s, %[4]s::text) IN (SELECT * FROM unnest($1::bigint[], $2::text[])))
		FOR UPDATE SKIP LOCKED)
	UPDATE %[1]s AS o SET %[3]s = 'READY', %[5]s
	FROM dead WHERE o.%[2]s = dead.%[2]s RETURNING o.%[2]s`

func buildQueries(table string, c configs.OutboxColumns) queries {
	t := pgx.Identifier(strings.Split(table, ".")).Sanitize()
	q := func(name string) string { return pgx.Identifier{name}.Sanitize() }
	id, status, avail, locked := q(c.ID), q(c.Status), q(c.AvailableAt), q(c.LockedUntil)
	// Timestamps are read as timestamptz: a TIMESTAMP column is then interpreted in the session's
	// UTC, a TIMESTAMPTZ one is unchanged.
	cols := strings.Join([]string{
		id + "::bigint",
		q(c.EventID) + "::text",
		q(c.AggregateType) + "::text",
		q(c.AggregateID) + "::text",
		q(c.EventType) + "::text",
		status + "::text",
		q(c.Attempts) + "::int",
		avail + "::timestamptz",
		locked + "::timestamptz",
		q(c.LastError) + "::text",
		q(c.CreatedAt) + "::timestamptz",
		q(c.SentAt) + "::timestamptz",
		q(c.SchemaVersion) + "::int",
	}, ", ")
	claimed := fmt.Sprintf(`%[1]s = 'PROCESSING' AND %[2]s < now()`, status, locked)
	count := map[outbox.Status]string{}
	for _, s := range outbox.Statuses {
		// Rather than one GROUP BY: each count is a small index-only scan, none costly enough to
		// trigger JIT or parallel workers on the service's database, and they run side by side.
		count[s] = fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s = '%s'`, t, status, s)
	}
	return queries{
		count:  count,
		deaths: fmt.Sprintf(`SELECT %s, %s::text, %s FROM %s WHERE %s = ANY($1::bigint[]) AND %s = 'DEAD'`, id, q(c.EventID), q(c.AvailableAt), t, id, status),
		ping:   fmt.Sprintf(`SELECT 1 FROM %s LIMIT 0`, t),
		readyAgeAndStuck: fmt.Sprintf(`SELECT
				(SELECT extract(epoch FROM now() - min(%[3]s)::timestamptz)::float8 FROM %[1]s WHERE %[2]s = 'READY' AND %[3]s <= now()),
				stuck.n, stuck.age
			FROM (SELECT count(*) AS n, extract(epoch FROM now() - min(%[5]s)::timestamptz)::float8 AS age FROM %[1]s WHERE %[4]s) AS stuck`,
			t, status, avail, claimed, locked),
		// reltuples is -1 before the first ANALYZE; the caller then counts exactly.
		estimate: fmt.Sprintf(`SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = '%s'::regclass`,
			strings.ReplaceAll(t, "'", "''")),
		selectEvent: fmt.Sprintf(`SELECT %s FROM %s`, cols, t),
		release: fmt.Sprintf(`WITH claimable AS (
				SELECT %[2]s FROM %[1]s WHERE %[3]s AND ($1::bigint[] IS NULL OR %[2]s = ANY($1))
				ORDER BY %[2]s LIMIT $2 FOR UPDATE SKIP LOCKED)
			UPDATE %[1]s AS o SET %[4]s = 'READY', %[5]s = NULL
			FROM claimable WHERE o.%[2]s = claimable.%[2]s`, t, id, claimed, status, locked),
		requeue:      fmt.Sprintf(requeue, t, id, status, q(c.EventID), fmt.Sprintf("%s = now(), %s = NULL", avail, locked)),
		requeueReset: fmt.Sprintf(requeue, t, id, status, q(c.EventID), fmt.Sprintf("%s = now(), %s = NULL, %s = 0", avail, locked, q(c.Attempts))),
		id:           id, eventID: q(c.EventID), eventType: q(c.EventType), aggregateID: q(c.AggregateID), status: status,
		lockedUntil: locked, createdAt: q(c.CreatedAt), payload: q(c.Payload),
	}
}
