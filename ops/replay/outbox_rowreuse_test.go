package replay_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/storetest"
)

// An outbox replay requeues the events its plan chose, not whatever rows now have their ids: the
// table emptied with RESTART IDENTITY (a MariaDB TRUNCATE restarts it too) and a different DEAD
// event inserted took row 1, and the job requeued that event, whose inbox no one had checked. The
// row is left DEAD and the planned event settled failed, saying why; row 2, which holds its
// planned event again, is requeued.
func TestOutboxReplayOfARowNowHoldingAnotherEvent(t *testing.T) {
	for _, c := range []struct {
		name, dialect string
	}{
		{"PostgreSQL", "postgres"},
		{"MariaDB", "mysql"},
	} {
		t.Run(c.name, func(t *testing.T) {
			so := openSeedOutbox(t, c.dialect)
			status := func(id string) string {
				return so.text(t, `SELECT concat(id, ' ', status) FROM outbox_event WHERE event_id = $1`, id)
			}
			so.dead(t, "e-planned", "{}")
			so.dead(t, "e-kept", "{}")
			e, err := replay.New(replay.Options{Store: storetest.Open(t), Outboxes: []replay.OutboxTable{so.o}, Poll: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t)
			plan, err := e.Plan(ctx, "ops", replay.Source{Kind: "outbox", Outbox: "orders", IDs: []int64{1, 2}}, replay.Filter{})
			if err != nil || plan.Counts[replay.Publish] != 2 {
				t.Fatalf("plan %v, %v; want both to publish", plan.Counts, err)
			}
			so.exec(t, so.truncate)
			so.dead(t, "e-other", "{}")
			so.dead(t, "e-kept", "{}")
			if s := status("e-other"); s != "1 DEAD" {
				t.Fatalf("e-other is row %s; want row 1, DEAD", s)
			}
			work(t, e)
			job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}})
			if job.Published != 1 || job.Failed != 1 {
				t.Fatalf("job published %d, failed %d; want 1 (e-kept) and 1 (e-planned)", job.Published, job.Failed)
			}
			if s := status("e-other"); s != "1 DEAD" {
				t.Errorf("e-other, never planned, is %s; want 1 DEAD", s)
			}
			if s := status("e-kept"); s != "2 READY" {
				t.Errorf("e-kept is %s; want 2 READY", s)
			}
			ledger, err := e.Ledger(ctx, job.ID, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ledger {
				switch l.MessageID {
				case "e-planned":
					if want := `the row now holds another event ("e-other"), not "e-planned"`; l.Outcome != replay.LedgerFailed || !strings.Contains(l.Detail, want) {
						t.Errorf("e-planned: %s %q; want failed: %s…", l.Outcome, l.Detail, want)
					}
				case "e-kept":
					if l.Outcome != replay.LedgerPublished {
						t.Errorf("e-kept: %s %q; want requeued", l.Outcome, l.Detail)
					}
				default:
					t.Errorf("ledger entry of %s", l.MessageID)
				}
			}
			if len(ledger) != 2 {
				t.Errorf("ledger %+v; want 2 entries", ledger)
			}
		})
	}
}
