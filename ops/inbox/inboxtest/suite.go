package inboxtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/waittest"
)

func testVerdicts(t *testing.T, db DB) {
	db.Insert(t, Row{MessageID: "m-done", Consumer: "inventory", Processed: true},
		Row{MessageID: "m-busy", Consumer: "inventory"},
		Row{MessageID: "m-other", Consumer: "payments", Processed: true})
	in := db.Open(t, "inventory", "", "")
	if in.Consumer() != "inventory" {
		t.Fatalf("consumer %q", in.Consumer())
	}
	if err := in.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := in.Verdicts(context.Background(), []string{"m-done", "m-busy", "m-other", "m-new", "m-done"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]inbox.Verdict{"m-done": inbox.Processed, "m-busy": verdict(db, false),
		"m-other": inbox.NotProcessed, "m-new": inbox.NotProcessed} // another consumer's row does not count
	for id, v := range want {
		if got[id] != v {
			t.Errorf("%s: %s, want %s", id, got[id], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("verdicts %v: one per id asked", got)
	}
	if v, err := in.Verdicts(context.Background(), nil); err != nil || len(v) != 0 {
		t.Errorf("verdicts of no ids: %v, %v", v, err)
	}
}

func testVerdictsInBatches(t *testing.T, db DB) {
	db.Generate(t, "inventory", "m", 2500, 2)
	in := db.Open(t, "inventory", "", "")
	var ids []string
	for i := 1; i <= 3000; i++ {
		ids = append(ids, fmt.Sprintf("m%d", i))
	}
	got, err := in.Verdicts(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[inbox.Verdict]int{}
	for _, v := range got {
		counts[v]++
	}
	want := map[inbox.Verdict]int{inbox.Processed: 1250, inbox.InProgress: 1250, inbox.NotProcessed: 500}
	if db.RowsMeanProcessed() {
		want = map[inbox.Verdict]int{inbox.Processed: 2500, inbox.NotProcessed: 500}
	}
	if !maps.Equal(counts, want) {
		t.Fatalf("counts = %v, want %v", counts, want)
	}
	if got["m2"] != inbox.Processed || got["m3"] != verdict(db, false) || got["m2501"] != inbox.NotProcessed {
		t.Fatalf("m2 %s, m3 %s, m2501 %s", got["m2"], got["m3"], got["m2501"])
	}
}

// A replay's selection of 100,000 messages, a tenth of them processed, is answered in full.
func testVerdictsOf100000IDs(t *testing.T, db DB) {
	db.Generate(t, "inventory-service", "m-", 10_000, 1)
	db.Generate(t, "another-service", "m-", 50_000, 1)
	in := db.Open(t, "inventory-service", "", "")
	ids := make([]string, 100_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("m-%d", 100_000-i) // in no helpful order
	}
	start := time.Now()
	got, err := in.Verdicts(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("100,000 verdicts in %s", time.Since(start).Round(time.Millisecond))
	counts := map[inbox.Verdict]int{}
	for _, v := range got {
		counts[v]++
	}
	if len(got) != 100_000 || counts[inbox.Processed] != 10_000 || counts[inbox.NotProcessed] != 90_000 {
		t.Fatalf("%d verdicts: %v", len(got), counts)
	}
	if got["m-10000"] != inbox.Processed || got["m-10001"] != inbox.NotProcessed {
		t.Fatalf("m-10000 %s, m-10001 %s", got["m-10000"], got["m-10001"])
	}
}

// A trace reads the consumer's rows with their times, by message id, at most the limit asked.
func testRows(t *testing.T, db DB) {
	db.Insert(t, Row{MessageID: "m-2", Consumer: "billing", Processed: true, Received: time.Minute, ProcessedAfter: 2 * time.Second},
		Row{MessageID: "m-1", Consumer: "billing", Received: 30 * time.Second},
		Row{MessageID: "m-3", Consumer: "billing", Processed: true},
		Row{MessageID: "m-1", Consumer: "shipping", Processed: true})
	in := db.Open(t, "billing", "", "")
	rows, err := in.Rows(context.Background(), []string{"m-1", "m-2", "m-9"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].MessageID != "m-1" || rows[1].MessageID != "m-2" {
		t.Fatalf("rows %+v: want m-1 and m-2 of billing, by message id", rows)
	}
	if rows[0].ReceivedAt == nil || since(*rows[0].ReceivedAt) < 25*time.Second || since(*rows[0].ReceivedAt) > 5*time.Minute {
		t.Errorf("m-1 received %v: want about 30 s ago", rows[0].ReceivedAt)
	}
	if db.RowsMeanProcessed() {
		// One time a row: when the consumer's transaction wrote it, which is when it processed.
		if rows[0].ProcessedAt == nil || !rows[0].ProcessedAt.Equal(*rows[0].ReceivedAt) {
			t.Errorf("m-1 received %v, processed %v: a row means processed, at its one time", rows[0].ReceivedAt, rows[0].ProcessedAt)
		}
		if rows[1].ProcessedAt == nil || rows[1].ReceivedAt == nil || since(*rows[1].ProcessedAt) < 50*time.Second ||
			since(*rows[1].ProcessedAt) > 5*time.Minute || !rows[1].ProcessedAt.Equal(*rows[1].ReceivedAt) {
			t.Errorf("m-2 received %v, processed %v: want both 58 s ago", rows[1].ReceivedAt, rows[1].ProcessedAt)
		}
	} else {
		if rows[0].ProcessedAt != nil {
			t.Errorf("m-1 processed %v: want not processed", rows[0].ProcessedAt)
		}
		if rows[1].ProcessedAt == nil || rows[1].ReceivedAt == nil || rows[1].ProcessedAt.Sub(*rows[1].ReceivedAt) != 2*time.Second {
			t.Errorf("m-2 received %v, processed %v: want 2 s apart", rows[1].ReceivedAt, rows[1].ProcessedAt)
		}
	}
	if rows[0].Processed != db.RowsMeanProcessed() || !rows[1].Processed {
		t.Errorf("m-1 processed %v, m-2 processed %v: want %v and true", rows[0].Processed, rows[1].Processed, db.RowsMeanProcessed())
	}
	if rows, err := in.Rows(context.Background(), []string{"m-1", "m-2", "m-3"}, 1); err != nil || len(rows) != 1 || rows[0].MessageID != "m-1" {
		t.Fatalf("rows with limit 1: %+v, %v", rows, err)
	}
}

// The seed's inbox is shared: a trace reads the rows other consumers wrote for the message too,
// each naming its consumer, by message id and consumer, at most the limit asked; never the inbox's
// own consumer's (Rows reads those).
func testOtherConsumersRows(t *testing.T, db DB) {
	db.Insert(t, Row{MessageID: "m-1", Consumer: "billing", Processed: true},
		Row{MessageID: "m-1", Consumer: "shipping", Processed: true, Received: time.Minute},
		Row{MessageID: "m-1", Consumer: "audit", Received: 10 * time.Second},
		Row{MessageID: "m-2", Consumer: "shipping"},
		Row{MessageID: "m-3", Consumer: "billing"})
	in := db.Open(t, "billing", "", "")
	rows, err := in.OtherRows(context.Background(), []string{"m-1", "m-3", "m-9"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Consumer != "audit" || rows[1].Consumer != "shipping" || rows[0].MessageID != "m-1" ||
		(rows[0].ProcessedAt != nil) != db.RowsMeanProcessed() || rows[1].ProcessedAt == nil || rows[1].ReceivedAt == nil ||
		rows[0].Processed != db.RowsMeanProcessed() || !rows[1].Processed {
		t.Fatalf("other rows %+v: want m-1 of audit (received) and of shipping (processed)", rows)
	}
	if rows, err := in.OtherRows(context.Background(), []string{"m-1", "m-2"}, 1); err != nil || len(rows) != 1 || rows[0].Consumer != "audit" {
		t.Fatalf("other rows with limit 1: %+v, %v", rows, err)
	}
}

func since(t time.Time) time.Duration { return time.Since(t) }

// Message ids from dead letters are anyone's bytes: those the table stores are found byte for
// byte; one a PostgreSQL text column cannot hold (NUL, invalid UTF-8: ops.TextProblem) is not
// processed, on every database (the planner skips such a message as unresolvable anyway), without
// spoiling the batch; and a row answers only for its very id (not for one that differs in case or
// a trailing space, whatever the table's collation).
func testHostileIDs(t *testing.T, db DB) {
	texts := []string{`<script>alert(1)</script>`, `'; DELETE FROM inbox_message; --`, `back\slash \' "q"`,
		"emoji 📦 日本語", `100%_[x]`, "tab\tnewline\n", "nul\x00inside"}
	var stored []string
	refused := 0
	for _, s := range texts {
		if err := db.TryInsert(t, Row{MessageID: s, Consumer: "inventory", Processed: true}); err != nil {
			t.Logf("the database refuses %q: %v", s, err)
			refused++
			continue
		}
		if ops.TextProblem(s) == "" {
			stored = append(stored, s)
		}
	}
	if refused > 1 {
		t.Fatalf("the database refused %d of %d ids; only a NUL may be refused", refused, len(texts))
	}
	db.Insert(t, Row{MessageID: "m-case", Consumer: "inventory", Processed: true})
	in := db.Open(t, "inventory", "", "")
	ask := append([]string{"bad\x00id", "bad-\xff", "M-CASE", "m-case ", "m-case", "nul\x00inside"}, stored...)
	got, err := in.Verdicts(context.Background(), ask)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range append([]string{"m-case"}, stored...) {
		if got[id] != inbox.Processed {
			t.Errorf("%q: %s, want processed", id, got[id])
		}
	}
	for _, id := range []string{"bad\x00id", "bad-\xff", "M-CASE", "m-case ", "nul\x00inside"} {
		if got[id] != inbox.NotProcessed {
			t.Errorf("%q: %s, want not processed", id, got[id])
		}
	}
	if len(got) != len(ask) {
		t.Errorf("%d verdicts for %d ids: %v", len(got), len(ask), got)
	}
	rows, err := in.Rows(context.Background(), ask, 100)
	if err != nil || len(rows) != len(stored)+1 {
		t.Fatalf("rows of hostile ids: %d, %v; want %d", len(rows), err, len(stored)+1)
	}
	for _, r := range rows {
		if strings.EqualFold(r.MessageID, "m-case ") && r.MessageID != "m-case" {
			t.Errorf("row %q", r.MessageID)
		}
	}
}

func testMissingTableIsUnavailable(t *testing.T, db DB) {
	in := db.Open(t, "inventory", "no_such_inbox", "")
	_, err := in.Verdicts(context.Background(), []string{"x"})
	if !errors.Is(err, ops.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	var shown *ops.Error
	if !errors.As(err, &shown) || !strings.Contains(shown.Message, `the inbox of consumer "inventory" refused the query`) ||
		!strings.Contains(shown.Message, "console doctor") {
		t.Fatalf("what a person reads: %v", err)
	}
	if err := in.Ping(context.Background()); !errors.Is(err, ops.ErrUnavailable) {
		t.Fatalf("ping: %v", err)
	}
}

// The inbox's database restarted (its sessions ended) between two look-ups made within a second,
// before the pool would ping its idle connections: the look-up is read-only, so it is tried again
// on a fresh connection rather than answered "unknown" for every id (a plan's verdicts).
func testVerdictsAfterTheDatabaseDroppedItsSessions(t *testing.T, db DB) {
	db.Insert(t, Row{MessageID: "m-1", Consumer: "billing", Processed: true})
	in := db.Open(t, "billing", "", "")
	ctx := context.Background()
	if _, err := in.Verdicts(ctx, []string{"m-1"}); err != nil {
		t.Fatal(err)
	}
	if n := db.KillSessions(t); n == 0 {
		t.Fatal("no session of the inbox's pool to end")
	}
	v, err := in.Verdicts(ctx, []string{"m-1", "m-2"})
	if err != nil || v["m-1"] != inbox.Processed || v["m-2"] != inbox.NotProcessed {
		t.Fatalf("verdicts after the sessions ended: %v, %v", v, err)
	}
}

// Twenty concurrent look-ups on an inbox pool of 2 all complete.
func testTwentyLookupsOnTwoConnections(t *testing.T, db DB) {
	db.Insert(t, Row{MessageID: "m-1", Consumer: "billing", Processed: true})
	in := db.Open(t, "billing", "", "max_conns: 2, acquire_timeout: 5s")
	var g errgroup.Group
	for range 20 {
		g.Go(func() error {
			v, err := in.Verdicts(context.Background(), []string{"m-1", "m-2"})
			if err == nil && (v["m-1"] != inbox.Processed || v["m-2"] != inbox.NotProcessed) {
				err = fmt.Errorf("verdicts %v", v)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// With the inbox's only connection held past consumers[].inbox.acquire_timeout, a look-up fails
// within the bound, as unavailable, naming the consumer and the key.
func testBusy(t *testing.T, db DB) {
	in := db.Open(t, "billing", "", "max_conns: 1, acquire_timeout: 200ms")
	ctx := context.Background()
	// The only connection is made first: on a loaded machine its dial could take longer than the
	// 200 ms, and the look-up meant to hold it would fail as busy instead of waiting on the lock. The
	// dial itself is bounded by the 200 ms too, so the first look-ups may fail while it goes on
	// (CI: "0 of 1 in use, the others still connecting"): asked until the connection is there.
	waittest.For(t, 30*time.Second, "the inbox's one connection made", func() (error, bool) {
		_, err := in.Verdicts(ctx, []string{"m-0"})
		return err, err == nil
	})
	release := db.LockTable(t)
	var once sync.Once
	defer once.Do(release)
	blocked := make(chan error, 1)
	go func() { _, err := in.Verdicts(ctx, []string{"m-1"}); blocked <- err }() // waits on the lock, holding the connection
	db.WaitLockWaiters(t, 1)

	start := time.Now()
	_, err := in.Verdicts(ctx, []string{"m-2"})
	took := time.Since(start)
	once.Do(release)
	if err := <-blocked; err != nil {
		t.Errorf("the blocked look-up: %v", err)
	}
	const want = `the inbox of consumer "billing" is busy: its only connection is in use for 200ms; try again or raise inbox.max_conns of consumer "billing"`
	if !errors.Is(err, ops.ErrUnavailable) || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v; want ErrUnavailable saying %q", err, want)
	}
	if took > 1200*time.Millisecond {
		t.Errorf("failed after %s, bound 200ms", took)
	}
	t.Logf("after %s: %v", took.Round(time.Millisecond), err)
}

func testDatabaseDownIsUnavailable(t *testing.T, db DB) {
	in := db.OpenUnreachable(t, "billing")
	_, err := in.Verdicts(context.Background(), []string{"m-1"})
	var shown *ops.Error
	if !errors.Is(err, ops.ErrUnavailable) || !errors.As(err, &shown) ||
		shown.Message != `the inbox database of consumer "billing" did not answer; try again, or see whether it is up` {
		t.Fatalf("err = %v, want ErrUnavailable saying the inbox did not answer", err)
	}
	if _, err := in.Rows(context.Background(), []string{"m-1"}, 5); !errors.Is(err, ops.ErrUnavailable) {
		t.Fatalf("rows: %v", err)
	}
}
