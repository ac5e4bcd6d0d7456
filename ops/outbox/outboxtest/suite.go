package outboxtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/waittest"
)

func one(t *testing.T, db DB, r Row) int64 { t.Helper(); return db.Insert(t, r)[0] }

func testStats(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	ctx := context.Background()

	t.Run("Empty", func(t *testing.T) {
		st, err := o.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range outbox.Statuses {
			if st.Counts[s] != 0 {
				t.Errorf("%s = %d, want 0", s, st.Counts[s])
			}
		}
		if st.OldestReadyAge != nil || st.StuckLeases != 0 || st.OldestStuckAge != nil || st.SentIsEstimate {
			t.Errorf("empty outbox: %+v", st)
		}
	})

	db.Insert(t,
		Row{Status: outbox.Ready, AvailableIn: -2 * time.Minute},    // due for two minutes
		Row{Status: outbox.Ready, AvailableIn: time.Hour},           // not due yet: must not count as relay delay
		Row{Status: outbox.Processing, LockedFor: -5 * time.Second}, // stuck
		Row{Status: outbox.Processing, LockedFor: time.Minute},      // live lease
		Row{Status: outbox.Sent}, Row{Status: outbox.Sent}, Row{Status: outbox.Sent},
		Row{Status: outbox.Failed, AvailableIn: 30 * time.Second, LastError: "timeout"},
		Row{Status: outbox.Dead, LastError: "schema mismatch"})

	st, err := o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[outbox.Status]int64{"READY": 2, "PROCESSING": 2, "SENT": 3, "FAILED": 1, "DEAD": 1}
	for s, n := range want {
		if st.Counts[s] != n {
			t.Errorf("%s = %d, want %d", s, st.Counts[s], n)
		}
	}
	if st.StuckLeases != 1 {
		t.Errorf("stuck = %d, want 1", st.StuckLeases)
	}
	// The stuck row's lease expired 5 s before it was inserted; the live one's never counts.
	if st.OldestStuckAge == nil || *st.OldestStuckAge < 5*time.Second || *st.OldestStuckAge > 30*time.Second {
		t.Errorf("oldest stuck age = %v, want about 5s", st.OldestStuckAge)
	}
	if st.OldestReadyAge == nil || *st.OldestReadyAge < 119*time.Second || *st.OldestReadyAge > 130*time.Second {
		t.Errorf("oldest ready age = %v, want about 2m", st.OldestReadyAge)
	}
	if st.SentIsEstimate {
		t.Error("a small table must be counted exactly")
	}
	if st.Backlog() != 5 {
		t.Errorf("backlog = %d, want 5 (READY, PROCESSING and FAILED)", st.Backlog())
	}
	if st.CheckedAt.IsZero() || time.Since(st.CheckedAt) > time.Minute {
		t.Errorf("checked at %v", st.CheckedAt)
	}
	// The repairs invalidate the cached overview: an operator sees their action at once.
	cached, err := o.CachedStats(ctx, time.Hour)
	if err != nil || cached.Counts[outbox.Dead] != 1 {
		t.Fatalf("cached stats %v, %v", cached.Counts, err)
	}
	if n, err := o.ReleaseStuck(ctx, nil); err != nil || n != 1 {
		t.Fatalf("release = %d, %v", n, err)
	}
	if cached, err = o.CachedStats(ctx, time.Hour); err != nil || cached.StuckLeases != 0 || cached.OldestStuckAge != nil {
		t.Fatalf("cached stats after a release: stuck %d (for %v), %v", cached.StuckLeases, cached.OldestStuckAge, err)
	}
}

func testStatsEstimatesSentOnLargeTables(t *testing.T, db DB) {
	db.Generate(t, 250_000, 100)
	o := db.Open(t, "orders", "")
	st, err := o.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !st.SentIsEstimate {
		t.Fatal("250,000 rows: SENT should come from the estimate")
	}
	if st.Counts[outbox.Dead] != 2500 {
		t.Errorf("DEAD = %d, want exactly 2500", st.Counts[outbox.Dead])
	}
	if got := st.Counts[outbox.Sent]; got < 240000 || got > 255000 {
		t.Errorf("SENT estimate = %d, want about 247500", got)
	}
	// The DEAD rows of a large table page through by id, newest first, as triage and replay read
	// them (MaxLimit a page).
	f := outbox.Filter{Status: outbox.Dead, Limit: outbox.MaxLimit}
	var seen int
	prev := int64(250_001)
	for {
		p, err := o.List(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Events {
			if e.ID >= prev || e.ID%100 != 0 || e.Status != outbox.Dead {
				t.Fatalf("event %d (%s) after %d", e.ID, e.Status, prev)
			}
			prev = e.ID
			seen++
		}
		if p.NextCursor == 0 {
			break
		}
		f.Before = p.NextCursor
	}
	if seen != 2500 {
		t.Errorf("paged through %d DEAD events, want 2500", seen)
	}
}

func testStuckAtLeaseBoundary(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	id := one(t, db, Row{Status: outbox.Processing, LockedFor: 1500 * time.Millisecond})
	ctx := context.Background()
	st, err := o.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.StuckLeases != 0 {
		t.Fatalf("lease still valid: stuck = %d, want 0", st.StuckLeases)
	}
	if n, err := o.ReleaseStuck(ctx, nil); err != nil || n != 0 {
		t.Fatalf("release before expiry = %d, %v; want 0", n, err)
	}
	// The lease ends 1.5 s after it was taken, by the database's clock.
	waittest.For(t, 10*time.Second, "the expired lease counted as stuck", func() (int64, bool) {
		st, err := o.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.StuckLeases, st.StuckLeases == 1
	})
	page, err := o.List(ctx, outbox.Filter{StuckOnly: true})
	if err != nil || len(page.Events) != 1 || page.Events[0].ID != id || !page.Events[0].Stuck(time.Now()) {
		t.Fatalf("stuck list = %+v, %v", page, err)
	}
	if n, err := o.ReleaseStuck(ctx, []int64{id}); err != nil || n != 1 {
		t.Fatalf("release = %d, %v; want 1", n, err)
	}
	if s := db.Status(t, id); s != "READY" {
		t.Fatalf("status after release = %s", s)
	}
	e, err := o.Event(ctx, id)
	if err != nil || e.LockedUntil != nil {
		t.Fatalf("released event %+v, %v: want no lease", e, err)
	}
}

// A relay whose lease expired but that still holds the row (mid-publish) must keep it: the
// release skips the locked row, and after the relay commits SENT the row stays SENT.
func testReleaseNeverStealsARowALiveRelayHolds(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	ids := db.Insert(t, Row{Status: outbox.Processing, LockedFor: -30 * time.Second},
		Row{Status: outbox.Processing, LockedFor: -30 * time.Second})
	held, free := ids[0], ids[1]
	ctx := context.Background()

	relay := db.Relay(t)
	relay.Lock(t, held)

	done := make(chan struct{})
	var released int64
	var err error
	go func() {
		defer close(done)
		released, err = o.ReleaseStuck(ctx, nil)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("release blocked on a row the relay holds; it must skip it")
	}
	if err != nil {
		t.Fatal(err)
	}
	if released != 1 {
		t.Fatalf("released = %d, want 1 (only the free row)", released)
	}
	relay.Send(t, held)
	relay.Commit(t)
	if s := db.Status(t, held); s != "SENT" {
		t.Errorf("held row = %s, want SENT (the relay's outcome)", s)
	}
	if s := db.Status(t, free); s != "READY" {
		t.Errorf("free row = %s, want READY", s)
	}
	// Selected ids: a row that is not stuck any more is not touched.
	if n, err := o.ReleaseStuck(ctx, []int64{held}); err != nil || n != 0 {
		t.Errorf("release of a SENT row = %d, %v; want 0", n, err)
	}
}

// A release that races a relay re-claiming the row (fresh lease) must not undo the claim.
func testReleaseRacingAClaim(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	id := one(t, db, Row{Status: outbox.Processing, LockedFor: -30 * time.Second})
	ctx := context.Background()
	relay := db.Relay(t)
	// The relay re-claims with a fresh lease but has not committed yet.
	relay.Claim(t, id, time.Minute)
	n, err := o.ReleaseStuck(ctx, []int64{id})
	if err != nil || n != 0 {
		t.Fatalf("release = %d, %v; want 0", n, err)
	}
	relay.Commit(t)
	if n, err := o.ReleaseStuck(ctx, nil); err != nil || n != 0 {
		t.Fatalf("release after claim = %d, %v; want 0 (the lease is fresh)", n, err)
	}
	if s := db.Status(t, id); s != "PROCESSING" {
		t.Fatalf("claimed row = %s, want PROCESSING", s)
	}
}

// Two operators releasing the same stuck leases at once release each row once: together they
// count every row, and neither waits for the other's locks.
func testTwoReleasersReleaseEachRowOnce(t *testing.T, db DB) {
	const n = 300
	a, b := db.Open(t, "orders", ""), db.Open(t, "orders", "")
	ctx := context.Background()
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{Status: outbox.Processing, LockedFor: -time.Minute}
	}
	live := one(t, db, Row{Status: outbox.Processing, LockedFor: time.Hour})

	t.Run("SameIDsAtOnce", func(t *testing.T) {
		ids := db.Insert(t, rows...)
		var got [2]int64
		start := make(chan struct{})
		var g errgroup.Group
		for i, o := range []*outbox.Outbox{a, b} {
			g.Go(func() error {
				<-start
				var err error
				got[i], err = o.ReleaseStuck(ctx, append(slices.Clone(ids), live))
				return err
			})
		}
		close(start)
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		if got[0]+got[1] != n {
			t.Fatalf("released %d + %d, want %d in all", got[0], got[1], n)
		}
		for _, id := range ids {
			if s := db.Status(t, id); s != "READY" {
				t.Fatalf("row %d = %s", id, s)
			}
		}
	})

	// The second operator comes while the first holds the rows, before its commit: it skips them
	// without waiting and releases none; the first releases them all.
	t.Run("SecondWhileTheFirstHoldsThem", func(t *testing.T) {
		ids := db.Insert(t, rows...)
		holding, second := make(chan struct{}), make(chan struct{})
		var first int64
		var g errgroup.Group
		g.Go(func() error {
			var err error
			first, err = a.ReleaseStuckAudited(ctx, nil, func(_ context.Context, tx outbox.Tx, changed int64) error {
				if tx == nil {
					return errors.New("no transaction given to the audit")
				}
				close(holding)
				<-second
				return nil
			})
			return err
		})
		<-holding
		var secondN int64
		var err error
		took := time.Now()
		secondN, err = b.ReleaseStuck(ctx, ids)
		waited := time.Since(took)
		close(second)
		if gerr := g.Wait(); gerr != nil {
			t.Fatal(gerr)
		}
		if err != nil {
			t.Fatal(err)
		}
		if secondN != 0 || first != n {
			t.Fatalf("first released %d, second %d; want %d and 0", first, secondN, n)
		}
		if waited > 3*time.Second {
			t.Errorf("the second release waited %s for the first's locks", waited)
		}
		if s := db.Status(t, live); s != "PROCESSING" {
			t.Errorf("the live lease's row = %s, want PROCESSING", s)
		}
	})
}

// The audit row is written inside the repair's transaction: an audit that fails rolls the repair
// back, and is told how many rows the repair changed.
func testReleaseAudited(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	ctx := context.Background()
	ids := db.Insert(t, Row{Status: outbox.Processing, LockedFor: -time.Minute},
		Row{Status: outbox.Processing, LockedFor: -time.Minute}, Row{Status: outbox.Dead})
	refused := errors.New("the audit log is down")
	var told int64 = -1
	_, err := o.ReleaseStuckAudited(ctx, ids[:2], func(_ context.Context, _ outbox.Tx, changed int64) error {
		told = changed
		return refused
	})
	var auditErr *outbox.ErrAudit
	if !errors.As(err, &auditErr) || !errors.Is(err, refused) || told != 2 {
		t.Fatalf("release with a failing audit: %v (told %d); want an *ErrAudit after 2", err, told)
	}
	if s := db.Status(t, ids[0]); s != "PROCESSING" {
		t.Fatalf("a release whose audit failed changed the row to %s", s)
	}
	moved, err := o.RequeueAudited(ctx, ids[2:], false, func(_ context.Context, _ outbox.Tx, changed int64) error {
		told = changed
		return refused
	})
	if !errors.As(err, &auditErr) || moved != nil || told != 1 || db.Status(t, ids[2]) != "DEAD" {
		t.Fatalf("requeue with a failing audit: %v, %v (told %d)", moved, err, told)
	}
	n, err := o.ReleaseStuckAudited(ctx, ids[:2], func(context.Context, outbox.Tx, int64) error { return nil })
	if err != nil || n != 2 || db.Status(t, ids[1]) != "READY" {
		t.Fatalf("audited release = %d, %v", n, err)
	}
}

func testRequeueOnlyTouchesDeadAndFailed(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	ids := map[string]int64{}
	for _, s := range outbox.Statuses {
		ids[string(s)] = one(t, db, Row{Status: s, AvailableIn: time.Minute, LockedFor: -10 * time.Second, LastError: "boom"})
	}
	all := []int64{ids["READY"], ids["PROCESSING"], ids["SENT"], ids["FAILED"], ids["DEAD"], 999999}
	n, err := o.Requeue(context.Background(), all, true)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("requeued = %d, want 2", n)
	}
	for s, id := range ids {
		got := db.Status(t, id)
		want := s
		if s == "FAILED" || s == "DEAD" {
			want = "READY"
		}
		if got != want {
			t.Errorf("%s row is now %s, want %s", s, got, want)
		}
	}
	e, err := o.Event(context.Background(), ids["DEAD"])
	if err != nil {
		t.Fatal(err)
	}
	if e.Attempts != 0 || e.AvailableAt.After(time.Now().Add(time.Second)) || e.LockedUntil != nil {
		t.Errorf("requeued row: attempts %d, available_at %v, locked_until %v; want 0, due now, none", e.Attempts, e.AvailableAt, e.LockedUntil)
	}
	if _, err := o.Requeue(context.Background(), nil, false); !errors.Is(err, ops.ErrInvalid) {
		t.Errorf("requeue of no ids: %v, want ErrInvalid", err)
	}
	// Without reset the relay's attempts stay; RequeueIDs names what it moved.
	failed := one(t, db, Row{Status: outbox.Failed, Attempts: 7, LastError: "boom"})
	moved, err := o.RequeueIDs(context.Background(), []int64{ids["SENT"], failed}, false)
	if err != nil || len(moved) != 1 || moved[0] != failed {
		t.Fatalf("requeue ids = %v, %v; want [%d]", moved, err, failed)
	}
	if e, err := o.Event(context.Background(), failed); err != nil || e.Attempts != 7 {
		t.Fatalf("requeued without reset: %+v, %v; want attempts 7", e, err)
	}
}

// A DEAD row a relay's own tool holds is skipped, not waited for.
func testRequeueSkipsARowARelayHolds(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	ids := db.Insert(t, Row{Status: outbox.Dead}, Row{Status: outbox.Dead})
	relay := db.Relay(t)
	relay.Lock(t, ids[0])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	moved, err := o.RequeueIDs(ctx, ids, false)
	if err != nil || len(moved) != 1 || moved[0] != ids[1] {
		t.Fatalf("requeue = %v, %v; want only %d", moved, err, ids[1])
	}
	relay.Commit(t)
	if s := db.Status(t, ids[0]); s != "DEAD" {
		t.Fatalf("held row = %s", s)
	}
}

func testListAndDetail(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	ctx := context.Background()
	var ids []int64
	for range 7 {
		ids = append(ids, one(t, db, Row{Status: outbox.Dead, LastError: "boom"}))
	}
	one(t, db, Row{Status: outbox.Sent})

	t.Run("KeysetPages", func(t *testing.T) {
		var seen []int64
		f := outbox.Filter{Status: outbox.Dead, Limit: 3}
		for {
			p, err := o.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Events {
				seen = append(seen, e.ID)
			}
			if p.NextCursor == 0 {
				break
			}
			f.Before = p.NextCursor
		}
		if len(seen) != 7 || seen[0] != ids[6] || seen[6] != ids[0] {
			t.Fatalf("pages = %v, want the 7 DEAD ids newest first", seen)
		}
	})
	t.Run("Filters", func(t *testing.T) {
		p, err := o.List(ctx, outbox.Filter{EventType: "OrderCreated", CreatedFrom: time.Now().Add(-time.Hour)})
		if err != nil || len(p.Events) != 8 {
			t.Fatalf("%d events, %v", len(p.Events), err)
		}
		p, err = o.List(ctx, outbox.Filter{EventType: "Nope"})
		if err != nil || len(p.Events) != 0 {
			t.Fatalf("%d events, %v", len(p.Events), err)
		}
		p, err = o.List(ctx, outbox.Filter{CreatedTo: time.Now().Add(-time.Hour)})
		if err != nil || len(p.Events) != 0 {
			t.Fatalf("created before an hour ago: %d events, %v", len(p.Events), err)
		}
		agg := one(t, db, Row{Status: outbox.Failed, AggregateID: "o-filter", EventType: "OrderPaid"})
		defer db.Delete(t, agg)
		p, err = o.List(ctx, outbox.Filter{AggregateID: "o-filter", Status: outbox.Failed})
		if err != nil || len(p.Events) != 1 || p.Events[0].ID != agg || p.Events[0].EventType != "OrderPaid" {
			t.Fatalf("by aggregate: %+v, %v", p.Events, err)
		}
	})
	t.Run("BadLimit", func(t *testing.T) {
		_, err := o.List(ctx, outbox.Filter{Limit: 501})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "limit") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("StuckWithStatus", func(t *testing.T) {
		stuck := one(t, db, Row{Status: outbox.Processing, LockedFor: -time.Minute})
		defer db.Delete(t, stuck)
		_, err := o.List(ctx, outbox.Filter{StuckOnly: true, Status: outbox.Dead})
		if !errors.Is(err, ops.ErrInvalid) || err.Error() !=
			"status: stuck=true lists PROCESSING events with an expired lease; it cannot be combined with status=DEAD" {
			t.Fatalf("stuck DEAD events: err = %v, want a 400 saying the two contradict", err)
		}
		for _, f := range []outbox.Filter{{StuckOnly: true, Status: outbox.Processing}, {StuckOnly: true}} {
			p, err := o.List(ctx, f)
			if err != nil || len(p.Events) != 1 || p.Events[0].ID != stuck {
				t.Fatalf("%+v: %d events, %v; want the stuck one", f, len(p.Events), err)
			}
		}
	})
	t.Run("Detail", func(t *testing.T) {
		e, err := o.Event(ctx, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		if e.Payload != `{"orderId":"o-1"}` || e.LastError == nil || *e.LastError != "boom" || e.SchemaVersion != 1 ||
			e.Status != outbox.Dead || e.Attempts != 2 || e.AggregateType != "Order" || e.SentAt != nil ||
			e.CreatedAt.IsZero() || time.Since(e.CreatedAt) > time.Hour || time.Since(e.CreatedAt) < -time.Minute {
			t.Fatalf("event = %+v", e)
		}
		list, err := o.Events(ctx, []int64{ids[3], ids[1], 424242})
		if err != nil || len(list) != 2 || list[0].ID != ids[1] || list[1].ID != ids[3] || list[0].Payload != "" {
			t.Fatalf("events by id = %+v, %v; want two, in id order, without payloads", list, err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		if _, err := o.Event(ctx, 424242); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
}

func testFindAndCountDead(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	ctx := context.Background()
	ids := db.Insert(t, Row{Status: outbox.Sent, EventID: "evt-a", AggregateID: "o-7"},
		Row{Status: outbox.Dead, EventID: "evt-b", AggregateID: "o-8"},
		Row{Status: outbox.Dead, EventID: "evt-c", AggregateID: "o-7"},
		Row{Status: outbox.Ready, EventID: "evt-d", AggregateID: "o-9"})
	found, err := o.Find(ctx, []string{"evt-b", "nope"}, "o-7", 10)
	if err != nil || len(found) != 3 || found[0].ID != ids[0] || found[1].ID != ids[1] || found[2].ID != ids[2] {
		t.Fatalf("find = %+v, %v; want evt-a, evt-b, evt-c oldest first", found, err)
	}
	if found, err := o.Find(ctx, nil, "o-7", 1); err != nil || len(found) != 1 || found[0].EventID != "evt-a" {
		t.Fatalf("find with limit 1 = %+v, %v", found, err)
	}
	if found, err := o.Find(ctx, []string{"evt-d"}, "", 10); err != nil || len(found) != 1 || found[0].ID != ids[3] {
		t.Fatalf("find by event id alone = %+v, %v", found, err)
	}
	// What no text column can hold names no row, and does not spoil the look-up of the rest.
	if found, err := o.Find(ctx, []string{"bad\x00id", "bad-\xff", "evt-d"}, "o-\x00", 10); err != nil || len(found) != 1 {
		t.Fatalf("find with hostile ids = %+v, %v; want evt-d alone", found, err)
	}
	deaths, err := o.Deaths(ctx, append(slices.Clone(ids), 999999))
	if err != nil || len(deaths) != 2 {
		t.Fatalf("deaths = %v, %v; want 2", deaths, err)
	}
	for id, d := range deaths {
		e, err := o.Event(ctx, id)
		if err != nil || d != e.Death() || !strings.HasPrefix(d, e.EventID+"@") {
			t.Fatalf("death of %d = %q; want %q (%v)", id, d, e.Death(), err)
		}
	}
	if d, err := o.Deaths(ctx, nil); err != nil || len(d) != 0 {
		t.Fatalf("deaths of none = %v, %v", d, err)
	}
}

// Text a relay wrote — markup, quotes, backslashes, SQL, control characters, four-byte
// characters, a NUL where the database stores one — reads back byte for byte, in the detail, the
// list and a trace's look-up; filters on it match it exactly.
func testHostileBytes(t *testing.T, db DB) {
	o := db.Open(t, "orders", "")
	ctx := context.Background()
	hostile := []string{
		`<script>alert("x")</script>`,
		`'; DROP TABLE outbox_event; --`,
		`back\slash \' \" \\ \n`,
		"tab\tnew\nline\rreturn \x01\x7f",
		`100% _match_ [a-z]* ? $1 :name`,
		"emoji 📦 ü ñ 日本語 \u202e",
		"nul\x00inside",
		strings.Repeat("long ", 2000),
	}
	stored := 0
	for i, h := range hostile {
		r := Row{Status: outbox.Dead, EventID: fmt.Sprintf("h-%d-%s", i, clip(h)), EventType: clip(h), AggregateID: clip(h),
			Payload: `{"note":` + fmt.Sprintf("%q", h) + `}` + h, LastError: h}
		id, err := db.TryInsert(t, r)
		if err != nil {
			t.Logf("the database refuses %q: %v", clip(h), err)
			continue
		}
		stored++
		e, err := o.Event(ctx, id)
		if err != nil {
			t.Fatalf("%q: %v", clip(h), err)
		}
		if e.Payload != r.Payload || e.LastError == nil || *e.LastError != h || e.EventType != r.EventType ||
			e.AggregateID != r.AggregateID || e.EventID != r.EventID {
			t.Errorf("%q read back as payload %q, error %v, type %q, aggregate %q, id %q", clip(h), clip(e.Payload),
				e.LastError, e.EventType, e.AggregateID, e.EventID)
		}
		if p, err := o.List(ctx, outbox.Filter{EventType: r.EventType, AggregateID: r.AggregateID}); err != nil ||
			len(p.Events) != 1 || p.Events[0].ID != id {
			t.Errorf("list by %q: %+v, %v", clip(h), p.Events, err)
		}
		// A trace never looks up text a PostgreSQL column could not hold, whatever this one holds.
		want := 1
		if ops.TextProblem(r.EventID) != "" {
			want = 0
		}
		if found, err := o.Find(ctx, []string{r.EventID}, "", 5); err != nil || len(found) != want || want == 1 && found[0].ID != id {
			t.Errorf("find %q: %+v, %v; want %d", clip(h), found, err, want)
		}
	}
	if stored < len(hostile)-1 {
		t.Fatalf("the database stored %d of %d texts; only a NUL may be refused", stored, len(hostile))
	}
	// A filter value that is SQL matches only itself.
	if p, err := o.List(ctx, outbox.Filter{EventType: `x' OR '1'='1`}); err != nil || len(p.Events) != 0 {
		t.Fatalf("list by an injected type: %+v, %v", p.Events, err)
	}
}

// clip keeps a text short enough for the VARCHAR(128) columns.
func clip(s string) string {
	r := []rune(s)
	if len(r) > 40 {
		r = r[:40]
	}
	return string(r)
}

// Twenty concurrent overview and list reads on an outbox pool of 2 all complete (Stats alone runs
// six counts side by side on the pool).
func testTwentyReadersOnTwoConnections(t *testing.T, db DB) {
	o := db.Open(t, "orders", "max_conns: 2, acquire_timeout: 5s")
	db.Insert(t, Row{Status: outbox.Dead, AvailableIn: -time.Minute, LastError: "boom"}, Row{Status: outbox.Ready, AvailableIn: -time.Minute})
	var g errgroup.Group
	for range 20 {
		g.Go(func() error {
			if _, err := o.Stats(context.Background()); err != nil {
				return err
			}
			_, err := o.List(context.Background(), outbox.Filter{Status: outbox.Dead})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// With every connection held past outboxes[].acquire_timeout, a read fails within the bound, as
// unavailable, naming the outbox and the key to raise.
func testBusy(t *testing.T, db DB) {
	pooled := db.Open(t, "orders", "max_conns: 1, acquire_timeout: 200ms")
	ctx := context.Background()
	// Another session locks the table; a List through the outbox then waits on the lock while
	// holding the pool's only connection, as a slow statement would.
	release := db.LockTable(t)
	var once sync.Once
	defer once.Do(release)
	blocked := make(chan error, 1)
	go func() { _, err := pooled.List(ctx, outbox.Filter{}); blocked <- err }()
	db.WaitLockWaiters(t, 1)

	start := time.Now()
	err := pooled.Ping(ctx)
	took := time.Since(start)
	once.Do(release)
	if err := <-blocked; err != nil {
		t.Errorf("the blocked list: %v", err)
	}
	const want = `outbox "orders" is busy: its only connection is in use for 200ms; try again or raise max_conns of outbox "orders" (outboxes[].max_conns)`
	if !errors.Is(err, ops.ErrUnavailable) || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v; want ErrUnavailable saying %q", err, want)
	}
	var shown *ops.Error
	if !errors.As(err, &shown) || !strings.Contains(shown.Message, "is busy") {
		t.Errorf("what a person reads: %+v", shown)
	}
	if took > 1200*time.Millisecond {
		t.Errorf("failed after %s, bound 200ms", took)
	}
	t.Logf("after %s: %v", took.Round(time.Millisecond), err)
}

func testDatabaseDownIsUnavailable(t *testing.T, db DB) {
	o := db.OpenUnreachable(t)
	ctx := context.Background()
	if _, err := o.Stats(ctx); !errors.Is(err, ops.ErrUnavailable) {
		t.Fatalf("stats: err = %v, want ErrUnavailable", err)
	}
	if _, err := o.List(ctx, outbox.Filter{}); !errors.Is(err, ops.ErrUnavailable) {
		t.Fatalf("list: err = %v, want ErrUnavailable", err)
	}
	if _, err := o.ReleaseStuck(ctx, nil); !errors.Is(err, ops.ErrUnavailable) {
		t.Fatalf("release: err = %v, want ErrUnavailable", err)
	}
	if err := o.Ping(ctx); !errors.Is(err, ops.ErrUnavailable) {
		t.Fatalf("ping: err = %v, want ErrUnavailable", err)
	}
	var shown *ops.Error
	_, err := o.Event(ctx, 1)
	if !errors.As(err, &shown) || strings.Contains(shown.Message, "127.0.0.1") || strings.Contains(shown.Message, "dial") {
		t.Fatalf("what a person reads of an unreachable database: %v", err)
	}
}

// Services whose sessions run in another zone than UTC write the seed's timestamps in it
// (CURRENT_TIMESTAMP is the session's wall clock); the outbox's time_zone says which, and the
// console then reads leases, due times and ages by the same clock. Read as UTC, a live lease
// written west of UTC was an expired one — stuck, and released under the relay publishing it —
// and a due row east of it was not due yet. A zone west of UTC and one east, neither with
// daylight saving, each alone in the table.
func testTimestampsInTheWritersZone(t *testing.T, db DB) {
	ctx := context.Background()
	for _, zone := range []string{"America/Bogota", "Asia/Tokyo"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		db.WriteInZone(t, loc)
		ids := db.Insert(t,
			Row{Status: outbox.Processing, LockedFor: 2 * time.Minute},   // a live lease
			Row{Status: outbox.Ready, AvailableIn: -2 * time.Minute},     // due for two minutes
			Row{Status: outbox.Ready, AvailableIn: time.Hour},            // not due yet
			Row{Status: outbox.Processing, LockedFor: -10 * time.Second}) // expired ten seconds ago
		o := db.Open(t, "orders", "time_zone: "+zone)
		st, err := o.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.StuckLeases != 1 {
			t.Errorf("%s: stuck = %d, want 1 (the expired lease, not the live one)", zone, st.StuckLeases)
		}
		if st.OldestReadyAge == nil || *st.OldestReadyAge < 119*time.Second || *st.OldestReadyAge > 130*time.Second {
			t.Errorf("%s: oldest ready age = %v, want about 2m", zone, st.OldestReadyAge)
		}
		if n, err := o.ReleaseStuck(ctx, ids[:1]); err != nil || n != 0 {
			t.Errorf("%s: release of the live lease = %d, %v; want 0", zone, n, err)
		}
		e, err := o.Event(ctx, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(e.CreatedAt); d < -time.Minute || d > time.Minute {
			t.Errorf("%s: created at %v, %v ago; want now", zone, e.CreatedAt, d)
		}
		if e.LockedUntil == nil || time.Until(*e.LockedUntil) < time.Minute || e.Stuck(time.Now()) {
			t.Errorf("%s: the live lease ends at %v; want in about 2m, not stuck", zone, e.LockedUntil)
		}
		p, err := o.List(ctx, outbox.Filter{CreatedFrom: time.Now().Add(-time.Minute)})
		if err != nil || len(p.Events) != len(ids) {
			t.Errorf("%s: created in the last minute: %d events, %v; want %d", zone, len(p.Events), err, len(ids))
		}
		for _, id := range ids {
			db.Delete(t, id)
		}
	}
}
