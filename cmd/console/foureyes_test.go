package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// TestTwoPersonRuleCountsPeopleAndVolume: the two-person rule was per job — five one-record plans
// ran where one five-record plan waited —, a direct outbox requeue moved what a plan of the same
// events would hold for approval, and two tokens of one person approved each other. Now it counts
// what one person moved from one source within replay.four_eyes.window, across replays, direct
// requeues and offset moves; a direct requeue past it is refused and pointed at a plan; and a
// token acts for its owner (auth.tokens[].owner), so neither the owner nor another token of theirs
// approves what the token started. Threshold 4 here.
func TestTwoPersonRuleCountsPeopleAndVolume(t *testing.T) {
	k := startKafka(t, map[string]int32{"orders": 1, "orders.DLT": 1})
	ctx := waittest.Context(t, 3*time.Minute)
	cl := kfaketest.Client(t, k.Cluster())
	var recs []*kgo.Record
	for i := range 8 {
		recs = append(recs, &kgo.Record{Topic: "orders.DLT", Key: []byte(fmt.Sprint("order-", i)), Value: []byte(`{}`),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "messageId", Value: []byte(fmt.Sprint("m-", i))}}})
	}
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	mustDo(t, cl.ProduceSync(ctx, recs...).FirstErr())
	kfaketest.Commit(t, kadm.NewClient(cl), "billing", "orders", map[int32]int64{0: 2})

	owned := func(name, token, owner string) string {
		sum := sha256.Sum256([]byte(token))
		return fmt.Sprintf("    - {name: %s, role: operator, sha256: %s, owner: %s}\n", name, hex.EncodeToString(sum[:]), owner)
	}
	storeDSN, outboxDSN := pgtest.NewDatabase(t), seededOutbox(t)
	base := startConsole(t, basicAuth(owned("otto-laptop", "tok-otto-laptop", "otto")+owned("otto-ci", "tok-otto-ci", "otto"))+fmt.Sprintf(`
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
kafka: [{name: main, brokers: [%q]}]
replay: {four_eyes: {enabled: true, threshold: 4, window: 1h}}
`, storeDSN, outboxDSN, k.Addrs()[0]))
	call := func(token, method, path, body string) response {
		t.Helper()
		return bearer(t, method, base+path, token, body)
	}
	status := func(job string) string {
		return decode[struct{ Status string }](t, call("tok-viewer", "GET", paths.APIReplay(job), "")).Status
	}
	replayOne := func(offset int) (job, st string) {
		t.Helper()
		r := call("tok-otto-laptop", "POST", paths.APIPlanReplay,
			fmt.Sprintf(`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[{"partition":0,"offset":%d}]}}`, offset))
		if r.status != http.StatusOK {
			t.Fatalf("plan: %d %s", r.status, r.body)
		}
		plan := decode[struct {
			PlanID string `json:"plan_id"`
		}](t, r).PlanID
		r = call("tok-otto-laptop", "POST", paths.APIReplays, `{"plan_id":"`+plan+`","reason":"stock fixed"}`)
		if r.status != http.StatusOK {
			t.Fatalf("start: %d %s", r.status, r.body)
		}
		job = decode[struct{ ID string }](t, r).ID
		st = waittest.For(t, 30*time.Second, "job "+job+" settles", func() (string, bool) {
			s := status(job)
			return s, s == "done" || s == "awaiting_approval" || s == "failed"
		})
		return job, st
	}

	t.Run("FiveSmallJobsOfOnePerson", func(t *testing.T) {
		var statuses []string
		var fifth string
		for i := range 5 {
			job, st := replayOne(i)
			statuses, fifth = append(statuses, st), job
		}
		if want := "[done done done done awaiting_approval]"; fmt.Sprint(statuses) != want {
			t.Fatalf("five one-record jobs of otto's: %v, want %s", statuses, want)
		}
		// Approval compares people: otto's other token, and otto himself, are otto.
		if r := call("tok-otto-ci", "POST", paths.APIReplayApprove(fifth), "{}"); r.status != http.StatusForbidden ||
			!strings.Contains(r.body, "otto started this replay; a second, different person must approve it") {
			t.Errorf("otto's other token approving: %d %s", r.status, r.body)
		}
		otto, csrf := signedIn(t, base, "otto")
		if r := do(t, otto, "POST", base+paths.ReplayApprove(fifth), "application/x-www-form-urlencoded", "_csrf="+csrf); r.status != http.StatusForbidden {
			t.Errorf("otto approving his token's job: %d", r.status)
		}
		if r := call("tok-operator", "POST", paths.APIReplayApprove(fifth), "{}"); r.status != http.StatusOK {
			t.Fatalf("another person approving: %d %s", r.status, r.body)
		}
		waittest.Until(t, 30*time.Second, "the approved job runs", func() bool { return status(fifth) == "done" })
		// Another person's small job is theirs to count: it runs.
		r := call("tok-operator", "POST", paths.APIPlanReplay, `{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[{"partition":0,"offset":5}]}}`)
		plan := decode[struct {
			PlanID string `json:"plan_id"`
		}](t, r).PlanID
		r = call("tok-operator", "POST", paths.APIReplays, `{"plan_id":"`+plan+`","reason":"stock fixed"}`)
		if r.status != http.StatusOK || strings.Contains(r.body, "awaiting_approval") {
			t.Errorf("another operator's one-record job: %d %s", r.status, r.body)
		}
	})

	t.Run("DirectRequeuesCountAndAreRoutedThroughAPlan", func(t *testing.T) {
		dead := decode[struct{ Events []struct{ ID int64 } }](t, call("tok-viewer", "GET", paths.APIOutboxEvents("orders")+"?status=DEAD", "")).Events
		ids := func(from, to int) string {
			var s []string
			for _, e := range dead[from:to] {
				s = append(s, fmt.Sprint(e.ID))
			}
			return `{"ids":[` + strings.Join(s, ",") + `],"reason":"serializer fixed"}`
		}
		requeue := paths.APIOutboxRequeue("orders")
		if r := call("tok-otto-laptop", "POST", requeue, ids(0, 5)); r.status != http.StatusForbidden ||
			!strings.Contains(r.body, "plan it instead") && !strings.Contains(r.body, "Plan it instead") || !strings.Contains(r.body, paths.APIPlanReplay) {
			t.Errorf("five events requeued directly: %d %s; want 403 pointing at a plan", r.status, r.body)
		}
		if r := call("tok-otto-laptop", "POST", requeue, ids(5, 7)); r.status != http.StatusOK {
			t.Fatalf("two events: %d %s", r.status, r.body)
		}
		// Two more by otto's other token: 2 + 3 of the same person pass the threshold.
		if r := call("tok-otto-ci", "POST", requeue, ids(7, 10)); r.status != http.StatusForbidden {
			t.Errorf("three more by otto's other token: %d %s; want 403", r.status, r.body)
		}
		if r := call("tok-operator", "POST", requeue, ids(7, 10)); r.status != http.StatusOK {
			t.Errorf("three by another person: %d %s", r.status, r.body)
		}
		// A plan of otto's of the same outbox counts what he requeued directly: it waits.
		r := call("tok-otto-laptop", "POST", paths.APIPlanReplay, `{"source":{"kind":"outbox","outbox":"orders","ids":[`+fmt.Sprint(dead[10].ID, ",", dead[11].ID, ",", dead[12].ID)+`]}}`)
		if r.status != http.StatusOK {
			t.Fatalf("outbox plan: %d %s", r.status, r.body)
		}
		plan := decode[struct {
			PlanID string `json:"plan_id"`
		}](t, r).PlanID
		if r := call("tok-otto-laptop", "POST", paths.APIReplays, `{"plan_id":"`+plan+`","reason":"serializer fixed"}`); !strings.Contains(r.body, `"awaiting_approval"`) {
			t.Errorf("otto's outbox job after his direct requeues: %d %s; want awaiting_approval", r.status, r.body)
		}
	})

	// Eight requeues of one event each by one person at the same moment: each alone is under the
	// threshold, together they are not. The rule's check and its record take turns per person and
	// source, so exactly four go through; psql counts the events that left DEAD.
	t.Run("EightRequeuesAtOnceCountTogether", func(t *testing.T) {
		dead := decode[struct{ Events []struct{ ID int64 } }](t, call("tok-viewer", "GET", paths.APIOutboxEvents("orders")+"?status=DEAD&limit=100", "")).Events
		if len(dead) < 8 {
			t.Fatalf("%d DEAD events left in the seeded outbox; the test needs 8", len(dead))
		}
		var ids []string
		statuses := make([]int, 8)
		var wg sync.WaitGroup
		for i, e := range dead[len(dead)-8:] {
			ids = append(ids, fmt.Sprint(e.ID))
			wg.Go(func() {
				statuses[i] = call("tok-admin", "POST", paths.APIOutboxRequeue("orders"), fmt.Sprintf(`{"ids":[%d],"reason":"serializer fixed"}`, e.ID)).status
			})
		}
		wg.Wait()
		var ok, refused int
		for _, st := range statuses {
			switch st {
			case http.StatusOK:
				ok++
			case http.StatusForbidden:
				refused++
			}
		}
		left := pgtest.Value[int64](t, outboxDSN, `SELECT count(*) FROM outbox_event WHERE id = ANY($1::bigint[]) AND status <> 'DEAD'`,
			"{"+strings.Join(ids, ",")+"}")
		if ok != 4 || refused != 4 || left != 4 {
			t.Fatalf("eight one-event requeues at once, threshold 4: %d went through, %d refused (%v), psql counts %d requeued; want 4, 4 and 4",
				ok, refused, statuses, left)
		}
	})

	t.Run("OffsetMoves", func(t *testing.T) {
		plan := func(token string, by int) (string, bool) {
			t.Helper()
			r := call(token, "POST", paths.APIOffsetsPlan("main", "billing"), fmt.Sprintf(`{"topic":"orders","partitions":[0],"to":{"kind":"shift","by":%d}}`, by))
			if r.status != http.StatusOK {
				t.Fatalf("offset plan: %d %s", r.status, r.body)
			}
			p := decode[struct {
				PlanID   string `json:"plan_id"`
				FourEyes bool   `json:"four_eyes"`
			}](t, r)
			return p.PlanID, p.FourEyes
		}
		first, fe := plan("tok-otto-laptop", 3)
		if fe {
			t.Fatal("three skipped records need nobody")
		}
		if r := call("tok-otto-laptop", "POST", paths.APIOffsetsApply("main", "billing"), `{"plan_id":"`+first+`","reason":"poison"}`); r.status != http.StatusOK {
			t.Fatalf("apply: %d %s", r.status, r.body)
		}
		second, fe := plan("tok-otto-ci", 2) // 3 + 2 of otto's
		if !fe {
			t.Fatal("otto's second move (3 + 2 skipped) needs nobody")
		}
		if r := call("tok-otto-laptop", "POST", paths.APIOffsetsApprove("main", "billing"), `{"plan_id":"`+second+`"}`); r.status != http.StatusForbidden {
			t.Errorf("otto's token approving his other token's plan: %d %s", r.status, r.body)
		}
		if r := call("tok-operator", "POST", paths.APIOffsetsApprove("main", "billing"), `{"plan_id":"`+second+`"}`); r.status != http.StatusOK {
			t.Errorf("another person approving: %d %s", r.status, r.body)
		}
	})

	// Every refused approval is audited alike, replay and offset move.
	db := pgtest.Conn(t, storeDSN)
	var n int
	mustDo(t, db.QueryRow(t.Context(), `SELECT count(*) FROM redrive.audit_log WHERE outcome = 'denied'
		AND reason LIKE '%a second, different person must approve it (replay.four_eyes)'`).Scan(&n))
	if n != 3 {
		t.Errorf("%d refused approvals audited, want 3 (two of the replay, one of the offset move)", n)
	}
}
