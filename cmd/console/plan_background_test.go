package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// planStateJSON is what the plan API answers about a plan, ready or not.
type planStateJSON struct {
	PlanID   string `json:"plan_id"`
	State    string `json:"state"` // absent on a ready plan
	Total    int    `json:"total"`
	Error    string `json:"error"`
	Poll     string `json:"poll"`
	Cancel   string `json:"cancel"`
	Progress struct {
		Planned, Estimate int
	} `json:"progress"`
}

// planned is POST /api/v1/replays/plan's answer once its plan is made. A plan still being made
// after replay.plan_wait (5 s) answers 202 planning, as the API documents, and a loaded make test
// makes a few thousand messages slower than that (a plan of 15,000 answered 202 with 5,000
// planned): such a plan is polled at its poll URL until it is ready or failed, as a client would.
// Any other answer is returned as it is.
func planned(t testing.TB, base string, status int, body string) (int, string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var p planStateJSON
		if (status != http.StatusAccepted && status != http.StatusOK) || json.Unmarshal([]byte(body), &p) != nil ||
			p.State != "planning" || p.Poll == "" {
			return status, body
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plan is still planning after 2 min: %s", tail(body, 500))
		}
		time.Sleep(250 * time.Millisecond)
		r := doRaw("GET", base+p.Poll, "", "")
		if r.err != nil {
			t.Fatalf("GET %s: %v", p.Poll, r.err)
		}
		status, body = r.status, r.body
	}
}

// kcatRecords counts the records of topic with kcat, an independent client, read to its end.
func kcatRecords(t *testing.T, broker, topic string) int {
	t.Helper()
	out, err := exec.Command("kcat", "-b", broker, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%o\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	return strings.Count(string(out), "\n")
}

// TestPlanOfAHundredThousandOverHTTP: POST /api/v1/replays/plan of 100,000 Kafka dead letters
// answers 202 at once with the plan planning; every GET of it answers well under the default
// request_timeout (15 s) while it fills, and the plan is ready within it; a job of it is a 409
// until then; the plan page follows it (htmx) with a cancel button. A second plan of the same
// selection is cancelled midway over the API: cancelled, nothing moved (kcat counts the DLT and
// the original topic), and a job of it is a 409.
func TestPlanOfAHundredThousandOverHTTP(t *testing.T) {
	const n = 100_000
	// Kafka in a process of its own, as in production: what is timed is the console's plan, and an
	// in-process kfake under -race doubled it on a loaded machine (kfaketest.External).
	addr := kfaketest.External(t, map[string]int32{"big.DLT": 2, "orders": 1})
	ctx := waittest.Context(t, 5*time.Minute)
	cl := kfaketest.ClientAt(t, []string{addr}, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(n))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		id := fmt.Sprintf("big-%d", i)
		recs[i] = &kgo.Record{Topic: "big.DLT", Partition: int32(i % 2), Key: []byte(fmt.Sprint(i % 997)),
			Value: []byte(fmt.Sprintf(`{"messageId":%q}`, id)),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.lang.IllegalStateException")}, {Key: "messageId", Value: []byte(id)}}}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := kcatRecords(t, addr, "big.DLT"); got != n {
		t.Fatalf("kcat counts %d records in big.DLT, want %d", got, n)
	}
	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\nkafka: [{name: main, brokers: [%q]}]\n",
		pgtest.NewDatabase(t), addr))
	const requestTimeout = 15 * time.Second
	var slowest time.Duration
	call := func(method, path, body string) response {
		start := time.Now()
		r := do(t, nil, method, base+path, "application/json", body)
		slowest = max(slowest, time.Since(start))
		return r
	}
	plan := func() planStateJSON {
		r := call("POST", "/api/v1/replays/plan", `{"source":{"kind":"kafka","cluster":"main","topic":"big.DLT"}}`)
		var p planStateJSON
		if r.status != http.StatusAccepted || json.Unmarshal([]byte(r.body), &p) != nil || p.State != "planning" ||
			p.Progress.Estimate != n || r.header.Get("Location") != "/api/v1/replays/plans/"+p.PlanID || p.Cancel == "" {
			t.Fatalf("plan of %d: %d %s %v", n, r.status, r.body, r.header)
		}
		return p
	}

	began := time.Now()
	p := plan()
	answered := time.Since(began)
	var polls int
	var refused, paged bool
	for {
		r := call("GET", p.Poll, "")
		polls++
		var now planStateJSON
		if r.status != 200 || json.Unmarshal([]byte(r.body), &now) != nil {
			t.Fatalf("GET %s: %d %s", p.Poll, r.status, r.body)
		}
		if now.State == "" { // the ready plan, in its shape of always
			if now.Total != n || !strings.Contains(r.body, `"items":[{`) || !strings.Contains(r.body, `"jobs":[]`) {
				t.Fatalf("ready plan: total %d: %.300s", now.Total, r.body)
			}
			break
		}
		if now.State != "planning" {
			t.Fatalf("plan while made: %s", r.body)
		}
		if !refused {
			s := call("POST", "/api/v1/replays", fmt.Sprintf(`{"plan_id":%q,"rate_per_second":10,"reason":"background plan"}`, p.PlanID))
			if s.status != http.StatusConflict || !strings.Contains(s.body, "is still planning") {
				t.Fatalf("start of a plan still planning: %d %s; want 409", s.status, s.body)
			}
			refused = true
		} else if !paged {
			page := call("GET", "/replays/plans/"+p.PlanID, "")
			if page.status != 200 || !strings.Contains(page.body, `data-testid="plan-live"`) || !strings.Contains(page.body, `hx-trigger="every 1s"`) ||
				!strings.Contains(page.body, `data-testid="plan-cancel"`) {
				t.Fatalf("plan page while planning: %d %.2000s", page.status, page.body)
			}
			paged = true
		}
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(began)
	t.Logf("plan of %d over HTTP: 202 in %s, ready after %s, %d polls, the slowest answer %s", n, answered.Round(time.Millisecond),
		took.Round(time.Millisecond), polls, slowest.Round(time.Millisecond))
	if took > requestTimeout || slowest > requestTimeout/5 {
		t.Errorf("ready after %s, slowest answer %s: want the plan within request_timeout (%s), each answer within a fifth of it",
			took, slowest, requestTimeout)
	}
	if page := call("GET", "/replays/plans/"+p.PlanID, ""); page.status != 200 || !strings.Contains(page.body, `data-testid="plan-counts"`) ||
		strings.Contains(page.body, `data-testid="plan-live"`) {
		t.Fatalf("plan page once ready: %d", page.status)
	}

	// Cancelled midway: as soon as it is seen planning. Its progress is written every half second
	// (planBeat), and without -race the whole plan can take less than a second, so waiting for a
	// progress above 0 could miss the planning altogether.
	c := plan()
	waittest.For(t, 30*time.Second, "the second plan under way", func() (string, bool) {
		var now planStateJSON
		r := call("GET", c.Poll, "")
		err := json.Unmarshal([]byte(r.body), &now)
		return r.body, err == nil && now.State == "planning"
	})
	r := call("POST", c.Cancel, "")
	var cancelled planStateJSON
	if r.status != 200 || json.Unmarshal([]byte(r.body), &cancelled) != nil || cancelled.State != "cancelled" || cancelled.Progress.Planned >= n {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	t.Logf("cancelled at %d of %d", cancelled.Progress.Planned, n)
	if r := call("POST", c.Cancel, ""); r.status != http.StatusConflict {
		t.Fatalf("second cancel: %d %s; want 409", r.status, r.body)
	}
	if r := call("GET", c.Poll, ""); !strings.Contains(r.body, `"state":"cancelled"`) || !strings.Contains(r.body, "cancelled by") {
		t.Fatalf("GET of the cancelled plan: %s", r.body)
	}
	if s := call("POST", "/api/v1/replays", fmt.Sprintf(`{"plan_id":%q,"reason":"background plan"}`, c.PlanID)); s.status != http.StatusConflict ||
		!strings.Contains(s.body, "was cancelled while planning") {
		t.Fatalf("start of a cancelled plan: %d %s", s.status, s.body)
	}
	if got := kcatRecords(t, addr, "big.DLT"); got != n {
		t.Fatalf("kcat counts %d records in big.DLT after the plans, want %d", got, n)
	}
	if got := kcatRecords(t, addr, "orders"); got != 0 {
		t.Fatalf("kcat counts %d records in orders: a plan moved something", got)
	}
	if slowest > requestTimeout/5 {
		t.Errorf("the slowest answer took %s", slowest)
	}
}

// TestSmallPlanStillAnswersWhole: a plan of a few messages answers 200 with the plan as it always
// did — no state, its items and jobs — and a refusal within the wait is the 4xx, nothing stored.
func TestSmallPlanStillAnswersWhole(t *testing.T) {
	k := startKafka(t, map[string]int32{"small.DLT": 1, "empty.DLT": 1})
	cl := kfaketest.Client(t, k.Cluster(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := waittest.Context(t, time.Minute)
	for i := range 3 {
		id := fmt.Sprintf("s-%d", i)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "small.DLT", Value: []byte(`{}`), Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")}, {Key: "messageId", Value: []byte(id)}}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\nkafka: [{name: main, brokers: [%q]}]\n",
		pgtest.NewDatabase(t), k.Addrs()[0]))
	r := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json", `{"source":{"kind":"kafka","cluster":"main","topic":"small.DLT"}}`)
	var p map[string]json.RawMessage
	if r.status != 200 || json.Unmarshal([]byte(r.body), &p) != nil {
		t.Fatalf("small plan: %d %s", r.status, r.body)
	}
	for _, key := range []string{"plan_id", "action", "created_at", "total", "actions", "warnings", "items", "jobs"} {
		if _, ok := p[key]; !ok {
			t.Errorf("the small plan's answer lacks %q: %s", key, r.body)
		}
	}
	if _, ok := p["state"]; ok || string(p["total"]) != "3" {
		t.Errorf("the small plan's answer: %s", r.body)
	}
	r = do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json", `{"source":{"kind":"kafka","cluster":"main","topic":"empty.DLT"}}`)
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "the selection holds no messages") {
		t.Fatalf("empty selection: %d %s", r.status, r.body)
	}
}
