package mysqloutbox

import (
	"fmt"
	"strings"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/mysqlpool"
	"github.com/redrive/redrive/ops/outbox"
)

// queries holds the SQL for one table, built once from the configured (validated) identifiers,
// each quoted. Columns are compared as they are (never wrapped in a function) so that the status
// index stays usable; database/sql converts what it reads into the Event's types.
type queries struct {
	table        string
	ping         string
	count        map[outbox.Status]string // count(*) of one state: literal, so each is a range of the index
	readyAge     string
	processing   string // PROCESSING rows, and how many of them are stuck
	estimate     string
	estimateArgs []any
	selectEvent  string // column list + FROM, for list and detail
	claimed      string // a stuck lease: PROCESSING and locked_until before now
	// columns, quoted, for building filters and repairs
	id, eventID, eventType, aggregateID, status, lockedUntil, availableAt, attempts, createdAt, payload string
}

func buildQueries(table string, c configs.OutboxColumns) queries {
	t := mysqlpool.QuotedTable(table)
	q := mysqlpool.Quote
	id, status, avail, locked := q(c.ID), q(c.Status), q(c.AvailableAt), q(c.LockedUntil)
	cols := strings.Join([]string{id, q(c.EventID), q(c.AggregateType), q(c.AggregateID), q(c.EventType), status,
		q(c.Attempts), avail, locked, q(c.LastError), q(c.CreatedAt), q(c.SentAt), q(c.SchemaVersion)}, ", ")
	claimed := fmt.Sprintf(`%s = 'PROCESSING' AND %s < NOW(6)`, status, locked)
	count := map[outbox.Status]string{}
	for _, s := range outbox.Statuses {
		// Rather than one GROUP BY: each count is a small range of the (status, available_at)
		// index, read from the index alone, and they run side by side.
		count[s] = fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s = '%s'`, t, status, s)
	}
	// The table's own database, or the connection's when the table is not qualified.
	var schema any
	name := table
	if i := strings.IndexByte(table, '.'); i >= 0 {
		schema, name = table[:i], table[i+1:]
	}
	return queries{
		table: t,
		count: count,
		ping:  fmt.Sprintf(`SELECT 1 FROM %s LIMIT 0`, t),
		readyAge: fmt.Sprintf(`SELECT TIMESTAMPDIFF(MICROSECOND, min(%[3]s), NOW(6)) FROM %[1]s WHERE %[2]s = 'READY' AND %[3]s <= NOW(6)`,
			t, status, avail),
		// One pass over the PROCESSING rows: telling the stuck ones reads each row's locked_until
		// (not in the index) anyway, and their number comes with it.
		processing: fmt.Sprintf(`SELECT count(*), count(CASE WHEN %[3]s < NOW(6) THEN 1 END),
				TIMESTAMPDIFF(MICROSECOND, min(CASE WHEN %[3]s < NOW(6) THEN %[3]s END), NOW(6))
			FROM %[1]s WHERE %[2]s = 'PROCESSING'`,
			t, status, locked),
		// TABLE_ROWS is InnoDB's estimate from its persistent statistics (ANALYZE TABLE, or
		// recomputed after a tenth of the rows changed); 0 or missing, the caller counts exactly.
		estimate:     `SELECT coalesce(max(TABLE_ROWS), 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = coalesce(?, DATABASE()) AND TABLE_NAME = ?`,
		estimateArgs: []any{schema, name},
		selectEvent:  fmt.Sprintf(`SELECT %s FROM %s`, cols, t),
		claimed:      claimed,
		id:           id, eventID: q(c.EventID), eventType: q(c.EventType), aggregateID: q(c.AggregateID), status: status,
		lockedUntil: locked, availableAt: avail, attempts: q(c.Attempts), createdAt: q(c.CreatedAt), payload: q(c.Payload),
	}
}
