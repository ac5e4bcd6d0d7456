package outbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// newOutbox creates a database with the seed's table and opens it as outbox "orders".
func newOutbox(t *testing.T) (*outbox.Outbox, string) {
	t.Helper()
	return openPool(t, "")
}

// insert adds one row; lease and availability are offsets from now in seconds.
func insert(t *testing.T, dsn, status string, availableIn, lockedFor float64, lastError string) int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var id int64
	var locked *float64
	if status == "PROCESSING" {
		locked = &lockedFor
	}
	if _, err := conn.Exec(context.Background(), `SET timezone = 'UTC'`); err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
			payload, status, attempts, available_at, locked_until, last_error, created_at)
		VALUES (gen_random_uuid()::text, 'Order', 'o-' || floor(random()*1000)::text, 'OrderCreated', 1,
			'{"orderId":"o-1"}', $1, 2, now() + make_interval(secs => $2),
			now() + make_interval(secs => $3), nullif($4, ''), now())
		RETURNING id`, status, availableIn, locked, lastError).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func status(t *testing.T, dsn string, id int64) string {
	t.Helper()
	return pgtest.Value[string](t, dsn, `SELECT status FROM outbox_event WHERE id = $1`, id)
}

func TestStats(t *testing.T) {
	o, dsn := newOutbox(t)
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
		if st.OldestReadyAge != nil || st.StuckLeases != 0 || st.SentIsEstimate {
			t.Errorf("empty outbox: %+v", st)
		}
	})

	insert(t, dsn, "READY", -120, 0, "")    // due for two minutes
	insert(t, dsn, "READY", 3600, 0, "")    // not due yet: must not count as relay delay
	insert(t, dsn, "PROCESSING", 0, -5, "") // stuck
	insert(t, dsn, "PROCESSING", 0, 60, "") // live lease
	insert(t, dsn, "SENT", 0, 0, "")
	insert(t, dsn, "SENT", 0, 0, "")
	insert(t, dsn, "SENT", 0, 0, "")
	insert(t, dsn, "FAILED", 30, 0, "timeout")
	insert(t, dsn, "DEAD", 0, 0, "schema mismatch")

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
	if st.OldestReadyAge == nil || *st.OldestReadyAge < 119*time.Second || *st.OldestReadyAge > 130*time.Second {
		t.Errorf("oldest ready age = %v, want about 2m", st.OldestReadyAge)
	}
	if st.SentIsEstimate {
		t.Error("a small table must be counted exactly")
	}
}

func TestStatsEstimatesSentOnLargeTables(t *testing.T) {
	o, dsn := newOutbox(t)
	pgtest.Exec(t, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type,
		schema_version, payload, status, available_at, created_at)
		SELECT 'e' || g, 'Order', 'o' || g, 'OrderCreated', 1, '{}',
		       CASE WHEN g % 100 = 0 THEN 'DEAD' ELSE 'SENT' END, now(), now()
		FROM generate_series(1, 250000) g; ANALYZE outbox_event`)
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
	if plan := explain(t, dsn, o.StuckSQL()); !strings.Contains(plan, "Index") {
		t.Errorf("the stuck-lease list must use an index; plan:\n%s", plan)
	}
}

func explain(t testing.TB, dsn, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), "EXPLAIN "+sql)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func TestStuckAtLeaseBoundary(t *testing.T) {
	o, dsn := newOutbox(t)
	id := insert(t, dsn, "PROCESSING", 0, 1.5, "")
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
	if s := status(t, dsn, id); s != "READY" {
		t.Fatalf("status after release = %s", s)
	}
}

// A relay whose lease expired but that still holds the row (mid-publish) must keep it: the
// release skips the locked row, and after the relay commits SENT the row stays SENT.
func TestReleaseNeverStealsARowALiveRelayHolds(t *testing.T) {
	o, dsn := newOutbox(t)
	held := insert(t, dsn, "PROCESSING", 0, -30, "")
	free := insert(t, dsn, "PROCESSING", 0, -30, "")
	ctx := context.Background()

	relay := pgtest.Conn(t, dsn)
	tx, err := relay.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM outbox_event WHERE id = $1 FOR UPDATE`, held); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	var released int64
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
	if _, err := tx.Exec(ctx, `UPDATE outbox_event SET status = 'SENT', sent_at = now() WHERE id = $1`, held); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if s := status(t, dsn, held); s != "SENT" {
		t.Errorf("held row = %s, want SENT (the relay's outcome)", s)
	}
	if s := status(t, dsn, free); s != "READY" {
		t.Errorf("free row = %s, want READY", s)
	}
	// Selected ids: a row that is not stuck any more is not touched.
	if n, err := o.ReleaseStuck(ctx, []int64{held}); err != nil || n != 0 {
		t.Errorf("release of a SENT row = %d, %v; want 0", n, err)
	}
}

// A release that races a relay re-claiming the row (fresh lease) must not undo the claim.
func TestReleaseRacingAClaim(t *testing.T) {
	o, dsn := newOutbox(t)
	id := insert(t, dsn, "PROCESSING", 0, -30, "")
	ctx := context.Background()
	relay := pgtest.Conn(t, dsn)
	tx, _ := relay.Begin(ctx)
	// The relay re-claims with a fresh lease but has not committed yet.
	if _, err := tx.Exec(ctx, `UPDATE outbox_event SET locked_until = now() + interval '1 minute' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	n, err := o.ReleaseStuck(ctx, []int64{id})
	if err != nil || n != 0 {
		t.Fatalf("release = %d, %v; want 0", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := o.ReleaseStuck(ctx, nil); err != nil || n != 0 {
		t.Fatalf("release after claim = %d, %v; want 0 (the lease is fresh)", n, err)
	}
}

func TestRequeueOnlyTouchesDeadAndFailed(t *testing.T) {
	o, dsn := newOutbox(t)
	ids := map[string]int64{}
	for _, s := range []string{"READY", "PROCESSING", "SENT", "FAILED", "DEAD"} {
		ids[s] = insert(t, dsn, s, 60, -10, "boom")
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
		got := status(t, dsn, id)
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
	if e.Attempts != 0 || e.AvailableAt.After(time.Now().Add(time.Second)) {
		t.Errorf("requeued row: attempts %d, available_at %v; want 0 and due now", e.Attempts, e.AvailableAt)
	}
	if _, err := o.Requeue(context.Background(), nil, false); !errors.Is(err, ops.ErrInvalid) {
		t.Errorf("requeue of no ids: %v, want ErrInvalid", err)
	}
}

func TestListAndDetail(t *testing.T) {
	o, dsn := newOutbox(t)
	ctx := context.Background()
	var ids []int64
	for i := 0; i < 7; i++ {
		ids = append(ids, insert(t, dsn, "DEAD", 0, 0, "boom"))
	}
	insert(t, dsn, "SENT", 0, 0, "")

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
	})
	t.Run("BadLimit", func(t *testing.T) {
		_, err := o.List(ctx, outbox.Filter{Limit: 501})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "limit") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("StuckWithStatus", func(t *testing.T) {
		stuck := insert(t, dsn, "PROCESSING", 0, -60, "")
		defer pgtest.Exec(t, dsn, `DELETE FROM outbox_event WHERE id = $1`, stuck)
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
		if e.Payload != `{"orderId":"o-1"}` || e.LastError == nil || *e.LastError != "boom" || e.SchemaVersion != 1 {
			t.Fatalf("event = %+v", e)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		if _, err := o.Event(ctx, 424242); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
}

func TestDatabaseDownIsUnavailable(t *testing.T) {
	o := openConfigured(t, "x", "postgres://postgres@127.0.0.1:1/nope?connect_timeout=1", "")
	if _, err := o.Stats(context.Background()); !errors.Is(err, ops.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}
