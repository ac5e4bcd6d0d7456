package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/store"
)

// Text written by others — a user agent or a reason with a NUL or a 0xFF byte — must not cost the
// audit entry: PostgreSQL refuses both in text and jsonb, and an unaudited change is the worst case.
func TestAuditKeepsEntriesWithOddBytes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := openStore(t)
	odd := "curl/8\xff\x00<script>"
	if err := st.RecordAudit(ctx, audit.Entry{Actor: "ops\x00", SourceIP: "10.0.0.1", UserAgent: odd, Action: "outbox.requeue",
		Target: "outbox/orders", Reason: "fix \xfe\x00 now", Outcome: audit.OutcomeOK,
		Detail: map[string]any{"note": "a\x00b\xff"}}); err != nil {
		t.Fatalf("the entry was refused: %v", err)
	}
	got, err := st.ListAudit(ctx, audit.Filter{})
	if err != nil || len(got) != 1 {
		t.Fatalf("entries %v, %v", got, err)
	}
	e := got[0]
	for _, s := range []string{e.Actor, e.UserAgent, e.Reason} {
		if strings.ContainsRune(s, 0) || !strings.Contains(s+e.UserAgent, "\uFFFD") {
			t.Errorf("stored %q: want NUL dropped and invalid bytes as U+FFFD", s)
		}
	}
	if e.UserAgent != "curl/8\uFFFD<script>" || e.Detail["note"] != "a\uFFFDb\uFFFD" {
		t.Errorf("user agent %q, detail %v", e.UserAgent, e.Detail)
	}
}

// The trace asks the audit log for the entries naming an id: "evt-p1" names the entries about
// evt-p1 — in the target, the reason or the detail, wherever it stands between other words — and
// not those about evt-p10 or xevt-p1, which a substring match used to return as part of another
// message's story. LIKE's and a regular expression's own characters in an id stay literal.
func TestAuditNamingMatchesWholeIDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := openStore(t)
	for _, e := range []audit.Entry{
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "replay evt-p1, fixed", Detail: map[string]any{"n": 1}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "replay evt-p10", Detail: map[string]any{"n": 2}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "other", Detail: map[string]any{"message_id": "evt-p1"}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "other", Detail: map[string]any{"message_id": "xevt-p1"}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "other", Detail: map[string]any{"message_id": "evt-p1_2"}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "a.b*(c)", Detail: map[string]any{"n": 6}},
		{Action: "replay.start", Target: "kafka/main/orders.DLT", Reason: "axb*(c)", Detail: map[string]any{"n": 7}},
	} {
		e.Actor, e.Outcome = "ops", audit.OutcomeOK
		if err := st.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		needle string
		want   int
	}{{"evt-p1", 2}, {"evt-p10", 1}, {"evt-p1_2", 1}, {"a.b*(c)", 1}, {"orders.DLT", 7}, {"p1", 0}} {
		got, err := st.AuditNaming(ctx, []string{tc.needle}, nil, time.Now().Add(-time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want {
			var what []any
			for _, e := range got {
				what = append(what, e.Reason, e.Detail)
			}
			t.Errorf("%q names %d entries %v; want %d", tc.needle, len(got), what, tc.want)
		}
	}
}

// An entry's at is when its transaction began (an outbox repair writes its entry inside the
// repair's transaction), so ids and ats disagree: an entry begun first and committed last has the
// higher id and the earlier at. The list is newest first by at, and its pages went on with
// "id < cursor": walking the demo's audit log (341 entries after 20 concurrent notes and
// releases) a page at a time missed 41 entries and listed none twice; limit=2 missed 37 and
// repeated 4. Every page size must walk every entry once, in the order of one whole page.
func TestAuditPagesFollowTheListsOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := pgtest.NewDatabase(t)
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	record := func(reason string) {
		t.Helper()
		if err := st.RecordAudit(ctx, audit.Entry{Actor: "ops", Action: "outbox.requeue", Target: "outbox/orders",
			Reason: reason, Outcome: audit.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		// A long transaction: begun (its at) before the next entry is written, committed after.
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT now()`); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // the point: the next entry's at is later than this one's
		record(fmt.Sprintf("short %d", i))
		if _, err := tx.Exec(ctx, `INSERT INTO `+store.Schema+`.audit_log (actor, role, source_ip, user_agent, action, target, reason, outcome, detail)
			VALUES ('ops', '', '', '', 'outbox.release_leases', 'outbox/orders', $1, 'ok', '{}')`, fmt.Sprintf("long %d", i)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	whole, err := st.ListAudit(ctx, audit.Filter{Limit: 100})
	if err != nil || len(whole) != 6 {
		t.Fatalf("entries %d, %v; want 6", len(whole), err)
	}
	want := make([]int64, len(whole))
	for i, e := range whole {
		want[i] = e.ID
	}
	for limit := 1; limit <= len(whole); limit++ {
		var got []int64
		f := audit.Filter{Limit: limit}
		for pages := 0; pages <= len(whole); pages++ {
			page, err := st.ListAudit(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				got = append(got, e.ID)
			}
			if len(page) < limit {
				break
			}
			f.Before = page[len(page)-1].ID
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d walked %v; want %v (the order of one page)", limit, got, want)
		}
	}
	// A cursor that names no entry (typed by hand) goes on below its id.
	if page, err := st.ListAudit(ctx, audit.Filter{Limit: 100, Before: want[0] + 1000}); err != nil || len(page) != 6 {
		t.Errorf("a cursor above every id: %d entries, %v; want 6", len(page), err)
	}
}
