package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// scrape reads /metrics with the Prometheus text parser and returns "name{k="v",…}" (labels
// sorted) → value.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var kv []string
			for _, l := range m.GetLabel() {
				kv = append(kv, l.GetName(), l.GetValue())
			}
			key, v := name, 0.0
			switch {
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Histogram != nil:
				key, v = name+"_count", float64(m.Histogram.GetSampleCount())
			default:
				continue
			}
			out[series(key, kv...)] = v
		}
	}
	return out
}

// series is the key scrape uses for a metric and its labels, given as name, value pairs.
// scrapeStable scrapes the exporter between two reads of the API at path and returns the second read
// with the scrape, once both reads show the same sampled snapshot with something in it (seen
// returns its sampled_at and whether it has): a sample landing between the reads shows as a
// changed sampled_at, and they are taken again.
func scrapeStable[T any](t *testing.T, base, path string, seen func(T) (*time.Time, bool)) (T, map[string]float64) {
	t.Helper()
	type read struct {
		api     T
		scraped map[string]float64
	}
	r := waittest.For(t, 20*time.Second, "a stable sampled snapshot at "+path, func() (read, bool) {
		before := decode[T](t, do(t, nil, "GET", base+path, "", ""))
		m := scrape(t, base)
		after := decode[T](t, do(t, nil, "GET", base+path, "", ""))
		at0, _ := seen(before)
		at1, some := seen(after)
		return read{after, m}, at0 != nil && at1 != nil && at0.Equal(*at1) && some
	})
	return r.api, r.scraped
}

func series(name string, kv ...string) string {
	var ls []string
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, fmt.Sprintf("%s=%q", kv[i], kv[i+1]))
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

// withPrefix counts the series of one metric whose labels contain match.
func withPrefix(m map[string]float64, name, match string) int {
	n := 0
	for k := range m {
		if strings.HasPrefix(k, name+"{") && strings.Contains(k, match) {
			n++
		}
	}
	return n
}

// The exporter's numbers are the API's numbers: outbox counts, Kafka lag per partition and group
// status, and the replay ledger's outcomes after a job.
func TestExporterMatchesAPI(t *testing.T) {
	base := kafkaConsole(t)

	// The exporter reads the one problem model: redrive_problems{kind,severity} counts what the
	// overview lists (notices aside), taken again if a problem changed between the reads.
	t.Run("Problems", func(t *testing.T) {
		count := func() map[string]float64 {
			o := decode[struct {
				Problems []struct{ Kind, Severity string }
			}](t, do(t, nil, "GET", base+"/api/v1/overview", "", ""))
			c := map[string]float64{}
			for _, p := range o.Problems {
				c[series("redrive_problems", "kind", p.Kind, "severity", p.Severity)]++
			}
			return c
		}
		waittest.For(t, 20*time.Second, "redrive_problems as the overview lists them", func() (string, bool) {
			before, m, after := count(), scrape(t, base), count()
			got := map[string]float64{}
			for k, v := range m {
				if strings.HasPrefix(k, "redrive_problems{") {
					got[k] = v
				}
			}
			return fmt.Sprintf("redrive_problems %v; the overview lists %v", got, after),
				maps.Equal(before, after) && len(after) > 0 && maps.Equal(got, after)
		})
	})

	t.Run("KafkaLag", func(t *testing.T) {
		// The API and the exporter read the same stored snapshot; a sample landing between the
		// reads shows as a changed sampled_at, and the comparison is taken again.
		groups, m := scrapeStable(t, base, "/api/v1/kafka/main/groups", func(g apiGroups) (*time.Time, bool) {
			return g.SampledAt, len(g.Groups) > 0
		})
		codes := map[string]float64{"OK": 0, "WARN": 1, "STALL": 2, "STOP": 3, "EMPTY": 4, "DEAD": 5}
		partitions, lagging := 0, 0
		for _, g := range groups.Groups {
			key := series("redrive_kafka_group_status", "cluster", "main", "group", g.Group)
			if v, ok := m[key]; !ok || v != codes[g.Status] {
				t.Errorf("%s = %v (present %v); the API says %s", key, v, ok, g.Status)
			}
			for _, tp := range g.Topics {
				for _, p := range tp.Partitions {
					key := series("redrive_kafka_group_lag", "cluster", "main", "group", g.Group, "topic", tp.Topic,
						"partition", strconv.Itoa(int(p.Partition)))
					v, ok := m[key]
					switch {
					case p.Lag < 0 && ok:
						t.Errorf("%s exported for an unknown lag", key)
					case p.Lag >= 0 && (!ok || v != float64(p.Lag)):
						t.Errorf("%s = %v (present %v); the API says %d", key, v, ok, p.Lag)
					}
					if p.Lag >= 0 {
						partitions++
					}
					if p.Lag > 0 {
						lagging++
					}
				}
			}
		}
		if lagging == 0 {
			t.Fatalf("the demo has lagging partitions; the API shows none: %+v", groups)
		}
		if n := withPrefix(m, "redrive_kafka_group_lag", `cluster="main"`); n != partitions {
			t.Errorf("%d lag series, the API has %d partitions with a known lag", n, partitions)
		}
		if age, ok := m[series("redrive_snapshot_age_seconds", "source", "kafka/main")]; !ok || age < 0 || age > 60 {
			t.Errorf("snapshot age %v (present %v)", age, ok)
		}
	})

	t.Run("KafkaDeadLetters", func(t *testing.T) {
		// The demo's DLTs are filled before the console starts, so the snapshot's sizes are final.
		topics := decode[struct {
			Topics []struct {
				Topic   string `json:"topic"`
				Retry   bool   `json:"retry"`
				Records int64  `json:"records"`
			} `json:"topics"`
		}](t, do(t, nil, "GET", base+"/api/v1/kafka/main/dead-letter-topics", "", ""))
		m := scrape(t, base)
		dlts := 0
		for _, tp := range topics.Topics {
			key := series("redrive_dead_letters", "source", "kafka/main", "name", tp.Topic)
			v, ok := m[key]
			switch {
			case tp.Retry && ok:
				t.Errorf("%s exported for a retry topic", key)
			case !tp.Retry && (!ok || v != float64(tp.Records)):
				t.Errorf("%s = %v (present %v); the API says %d", key, v, ok, tp.Records)
			}
			if !tp.Retry {
				dlts++
			}
		}
		// One series of every record per topic, and one of its open records (state="open").
		if all := withPrefix(m, "redrive_dead_letters", `source="kafka/main"`); dlts < 2 || all != 2*dlts ||
			withPrefix(m, "redrive_dead_letters", `source="kafka/main",state="open"`) != dlts {
			t.Errorf("%d dead-letter topics in the API, %d series", dlts, all)
		}
	})

	t.Run("Outboxes", func(t *testing.T) {
		v := decode[apiOutboxes](t, do(t, nil, "GET", base+"/api/v1/outboxes", "", ""))
		m := scrape(t, base)
		if len(v.Outboxes) != 1 || v.Outboxes[0].Counts["DEAD"] == 0 || v.Outboxes[0].Stuck == 0 {
			t.Fatalf("the demo outbox: %+v", v)
		}
		for _, o := range v.Outboxes {
			for status, n := range o.Counts {
				key := series("redrive_outbox_events", "outbox", o.Name, "status", status)
				if got, ok := m[key]; !ok || got != float64(n) {
					t.Errorf("%s = %v (present %v); the API says %d", key, got, ok, n)
				}
			}
			if got := m[series("redrive_outbox_stuck_leases", "outbox", o.Name)]; got != float64(o.Stuck) {
				t.Errorf("stuck leases %v; the API says %d", got, o.Stuck)
			}
			// The age moves with the clock between the two reads.
			if got := m[series("redrive_outbox_oldest_ready_age_seconds", "outbox", o.Name)]; math.Abs(got-o.Age) > 10 || o.Age < 300 {
				t.Errorf("oldest READY age %v; the API says %v", got, o.Age)
			}
		}
	})

	t.Run("ReplayOutcomes", func(t *testing.T) {
		before := scrape(t, base)
		for _, o := range []string{"published", "skipped", "failed"} {
			if v, ok := before[series("redrive_replay_messages_total", "outcome", o)]; !ok || v != 0 {
				t.Fatalf("before any replay: %s = %v (present %v)", o, v, ok)
			}
		}
		plan := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json",
			`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","partition":0,"from_offset":0,"to_offset":39}}`)
		p := decode[struct {
			PlanID string `json:"plan_id"`
		}](t, plan)
		start := do(t, nil, "POST", base+"/api/v1/replays", "application/json", fmt.Sprintf(`{"plan_id":%q,"rate_per_second":500,"reason":"exporter e2e"}`, p.PlanID))
		j := decode[struct{ ID string }](t, start)
		if plan.status != 200 || start.status != 200 {
			t.Fatalf("plan %d %s; start %d %s", plan.status, plan.body, start.status, start.body)
		}
		job := waitReplay(t, base, j.ID, 30*time.Second)
		if job.Status != replay.JobDone {
			t.Fatalf("job %+v", job)
		}
		if job.Published == 0 || job.Skipped == 0 {
			t.Fatalf("the demo inbox should make a mix: %+v", job)
		}
		want := map[string]float64{"published": float64(job.Published), "skipped": float64(job.Skipped), "failed": float64(job.Failed)}
		// The exporter reuses the ledger's counts for up to 10 s.
		waittest.For(t, 20*time.Second, fmt.Sprintf("the exporter's outcomes %v, as the job says", want), func() (map[string]float64, bool) {
			m := scrape(t, base)
			got := map[string]float64{}
			for o := range want {
				got[o] = m[series("redrive_replay_messages_total", "outcome", o)]
			}
			return got, maps.Equal(got, want)
		})
	})

	t.Run("NoErrorsAndOwnMetricsKept", func(t *testing.T) {
		m := scrape(t, base)
		for k, v := range m {
			if strings.HasPrefix(k, "redrive_exporter_errors_total{") && v != 0 {
				t.Errorf("%s = %v on a healthy console", k, v)
			}
		}
		for _, want := range []string{"redrive_sampler_leader{}", `redrive_exporter_errors_total{source="outbox/orders"}`,
			`redrive_exporter_errors_total{source="kafka/main"}`, `redrive_exporter_errors_total{source="replays"}`} {
			if _, ok := m[want]; !ok {
				t.Errorf("%s missing", want)
			}
		}
		if m["redrive_sampler_leader{}"] != 1 {
			t.Errorf("the only replica does not lead the sampler")
		}
		if withPrefix(m, "redrive_sampler_runs_total", `source="kafka/main"`) == 0 {
			t.Errorf("sampler runs are not exported")
		}
	})
}

// One outbox database down: the scrape still answers 200 with everything else, leaves that
// outbox's series out and counts the failure.
func TestExporterSkipsADownSource(t *testing.T) {
	orders := seededOutbox(t)
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
outboxes:
  - {name: orders, dsn: %q}
  - {name: billing, dsn: "postgres://postgres@%s/billing?sslmode=disable&connect_timeout=2"}
`, pgtest.NewDatabase(t), orders, freeAddr(t)))

	api := decode[struct {
		Outboxes []struct {
			Name  string `json:"name"`
			Error string `json:"error"`
		} `json:"outboxes"`
	}](t, do(t, nil, "GET", base+"/api/v1/outboxes", "", ""))
	if len(api.Outboxes) != 2 || api.Outboxes[0].Error != "" || api.Outboxes[1].Error == "" {
		t.Fatalf("the API should show billing down and orders up: %+v", api)
	}
	m := scrape(t, base)
	if got := m[series("redrive_outbox_events", "outbox", "orders", "status", "DEAD")]; got != 25 {
		t.Errorf("orders DEAD = %v", got)
	}
	if n := withPrefix(m, "redrive_outbox_events", `outbox="billing"`) + withPrefix(m, "redrive_outbox_stuck_leases", `outbox="billing"`); n != 0 {
		t.Errorf("%d series of the outbox that cannot be read", n)
	}
	if got := m[series("redrive_exporter_errors_total", "source", "outbox/billing")]; got < 1 {
		t.Errorf("errors for outbox/billing = %v", got)
	}
	if got := m[series("redrive_exporter_errors_total", "source", "outbox/orders")]; got != 0 {
		t.Errorf("errors for outbox/orders = %v", got)
	}
	if withPrefix(m, "redrive_http_request_duration_seconds_count", `route="/api/v1/outboxes"`) == 0 {
		t.Errorf("the console's HTTP metrics are gone")
	}
}

// RabbitMQ: queue depths and dead letters are the API's numbers from the same snapshot.
func TestExporterMatchesRabbitAPI(t *testing.T) {
	base, vhost, _ := rabbitConsole(t)
	// Every queue with its counts reported: a queue's first seconds have none, when the exporter
	// leaves its series out and the API says null (web's TestExporterLeavesOutUnreportedCounts).
	qs, m := scrapeStable(t, base, "/api/v1/rabbitmq/main/queues", func(q apiQueues) (*time.Time, bool) {
		reported := len(q.Queues) > 0
		for _, q := range q.Queues {
			reported = reported && q.StatsNotReported == ""
		}
		return q.SampledAt, reported
	})
	dlqs := 0
	for _, q := range qs.Queues {
		for state, n := range map[string]int64{"ready": q.Ready, "unacked": q.Unacked} {
			key := series("redrive_rabbitmq_queue_messages", "broker", "main", "vhost", q.Vhost, "queue", q.Name, "state", state)
			if got, ok := m[key]; !ok || got != float64(n) {
				t.Errorf("%s = %v (present %v); the API says %d", key, got, ok, n)
			}
		}
		key := series("redrive_dead_letters", "source", "rabbitmq/main", "name", q.Vhost+"/"+q.Name)
		got, ok := m[key]
		switch {
		case q.IsDeadLetterQueue && (!ok || got != float64(q.Ready)):
			t.Errorf("%s = %v (present %v); the API says %d ready", key, got, ok, q.Ready)
		case !q.IsDeadLetterQueue && ok:
			t.Errorf("%s exported for a queue that is not a dead-letter queue", key)
		}
		if q.IsDeadLetterQueue {
			dlqs++
		}
	}
	if got := m[series("redrive_dead_letters", "source", "rabbitmq/main", "name", vhost+"/orders.dlq")]; dlqs < 2 || got < 62 {
		t.Errorf("%d dead-letter queues; orders.dlq holds %v", dlqs, got)
	}
	// A DLQ's ready messages are all open: one series of them, one with state="open".
	if n := withPrefix(m, "redrive_dead_letters", `source="rabbitmq/main"`); n != 2*dlqs ||
		withPrefix(m, "redrive_dead_letters", `source="rabbitmq/main",state="open"`) != dlqs {
		t.Errorf("%d dead-letter series, the API has %d dead-letter queues", n, dlqs)
	}
}

// The OpenAPI document describes the answers the console really gives: each documented operation
// is called over demo data (Kafka, an outbox with its inbox, RabbitMQ) and its answer is
// validated against the document's schema for that status. The schemas forbid unknown fields,
// so a field renamed or added in handlers/ fails here until web/openapi.yaml says the same.
func TestOpenAPIMatchesResponses(t *testing.T) {
	base := kafkaConsole(t)
	doc := loadOpenAPI(t, base)
	covered := map[string]bool{}
	check := func(console, method, template, path, ctype, body string) response {
		t.Helper()
		r := do(t, nil, method, console+path, ctype, body)
		item := doc.Paths.Find(template)
		if item == nil || item.GetOperation(method) == nil {
			t.Fatalf("%s %s is not documented", method, template)
		}
		covered[method+" "+template] = true
		resp := item.GetOperation(method).Responses.Status(r.status)
		if resp == nil {
			t.Errorf("%s %s answered %d, which is not documented: %.300s", method, path, r.status, r.body)
			return r
		}
		mt := resp.Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil {
			t.Errorf("%s %s: no JSON schema for %d", method, template, r.status)
			return r
		}
		var v any
		if err := json.Unmarshal([]byte(r.body), &v); err != nil {
			t.Errorf("%s %s: %d, not JSON: %.300s", method, path, r.status, r.body)
			return r
		}
		if err := mt.Schema.Value.VisitJSON(v); err != nil {
			t.Errorf("%s %s (%d) does not match the document: %v\n%.2000s", method, path, r.status, err, r.body)
		}
		return r
	}
	get := func(template, path string) response { t.Helper(); return check(base, "GET", template, path, "", "") }
	post := func(template, path, body string) response {
		t.Helper()
		return check(base, "POST", template, path, "application/json", body)
	}

	get("/healthz", "/healthz")
	get("/readyz", "/readyz")
	// Load balancers probe with HEAD: GET's status and headers, no body.
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := do(t, nil, "HEAD", base+p, "", ""); r.status != http.StatusOK || r.body != "" ||
			!strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("HEAD %s: %d %q %q", p, r.status, r.header.Get("Content-Type"), r.body)
		}
		covered["HEAD "+p] = true
	}
	get("/api/openapi.json", "/api/openapi.json")
	get("/api/v1/overview", "/api/v1/overview")

	get("/api/v1/outboxes", "/api/v1/outboxes")
	get("/api/v1/outboxes/{name}", "/api/v1/outboxes/orders")
	get("/api/v1/outboxes/{name}", "/api/v1/outboxes/nope")
	var ids []int64
	for _, status := range []string{"DEAD", "PROCESSING", "SENT"} {
		r := get("/api/v1/outboxes/{name}/events", "/api/v1/outboxes/orders/events?limit=3&status="+status)
		for _, e := range decode[struct{ Events []struct{ ID int64 } }](t, r).Events {
			ids = append(ids, e.ID)
		}
	}
	get("/api/v1/outboxes/{name}/events", "/api/v1/outboxes/orders/events?limit=0")
	for _, id := range ids {
		get("/api/v1/outboxes/{name}/events/{id}", fmt.Sprintf("/api/v1/outboxes/orders/events/%d", id))
	}
	get("/api/v1/outboxes/{name}/events/{id}", "/api/v1/outboxes/orders/events/99999999")
	post("/api/v1/outboxes/{name}/leases/release", "/api/v1/outboxes/orders/leases/release", `{"all_stuck":true,"reason":"contract"}`)
	post("/api/v1/outboxes/{name}/leases/release", "/api/v1/outboxes/orders/leases/release", `{"idz":[1]}`)
	post("/api/v1/outboxes/{name}/events/requeue", "/api/v1/outboxes/orders/events/requeue",
		fmt.Sprintf(`{"ids":[%d],"reason":"contract"}`, ids[0]))
	check(base, "POST", "/api/v1/outboxes/{name}/events/requeue", "/api/v1/outboxes/orders/events/requeue", "text/plain", `{}`)
	post("/api/v1/outboxes/{name}/resolutions", "/api/v1/outboxes/orders/resolutions",
		`{"filter":{"event_type":"OrderCreated"},"state":"resolved","reason":"contract"}`)
	post("/api/v1/outboxes/{name}/resolutions", "/api/v1/outboxes/orders/resolutions", `{"events":[1],"state":"fixed"}`)
	post("/api/v1/outboxes/{name}/resolutions", "/api/v1/outboxes/nope/resolutions", `{"events":[1],"state":"resolved","reason":"contract"}`)
	get("/api/v1/audit", "/api/v1/audit?limit=1")
	get("/api/v1/audit", "/api/v1/audit")

	var groups apiGroups
	rabbittest.WaitFor(t, 30*time.Second, "a Kafka sample", func(context.Context) bool {
		groups = decode[apiGroups](t, get("/api/v1/kafka/{cluster}/groups", "/api/v1/kafka/main/groups"))
		return groups.SampledAt != nil && len(groups.Groups) > 0
	})
	get("/api/v1/kafka/{cluster}/groups", "/api/v1/kafka/nope/groups")
	g := url.PathEscape(groups.Groups[0].Group)
	get("/api/v1/kafka/{cluster}/groups/{group}", "/api/v1/kafka/main/groups/"+g)
	get("/api/v1/kafka/{cluster}/groups/{group}", "/api/v1/kafka/main/groups/nope")
	get("/api/v1/kafka/{cluster}/groups/{group}/history", "/api/v1/kafka/main/groups/"+g+"/history?since=1h")
	get("/api/v1/kafka/{cluster}/groups/{group}/history", "/api/v1/kafka/main/groups/"+g+"/history?since=forever")
	// since reads as every time in the API does: an age, a date or RFC 3339, within the retention.
	for since, want := range map[string]int{time.Now().UTC().Add(-24 * time.Hour).Format("2006-01-02"): 200,
		time.Now().Add(-time.Hour).UTC().Format(time.RFC3339): 200, "2000-01-01": 400, "2999-01-01": 400} {
		if r := get("/api/v1/kafka/{cluster}/groups/{group}/history", "/api/v1/kafka/main/groups/"+g+"/history?since="+since); r.status != want {
			t.Errorf("history since %s: %d %s; want %d", since, r.status, r.body, want)
		}
	}
	if r := get("/api/v1/kafka/{cluster}/groups/{group}/history", "/api/v1/kafka/main/groups/nope/history"); r.status != http.StatusNotFound {
		t.Errorf("the history of a group the cluster does not have: %d %s; want 404", r.status, r.body)
	}
	get("/api/v1/kafka/{cluster}/dead-letter-topics", "/api/v1/kafka/main/dead-letter-topics")
	// Offset moves: a plan (the demo's groups have members, so the apply is refused with 409), an
	// apply and an approval of an unknown plan.
	offsetsPath := "/api/v1/kafka/main/groups/" + g + "/offsets/"
	topic := groups.Groups[0].Topics[0].Topic
	offPlan := decode[struct {
		PlanID string `json:"plan_id"`
	}](t, post("/api/v1/kafka/{cluster}/groups/{group}/offsets/plan", offsetsPath+"plan",
		`{"topic":`+strconv.Quote(topic)+`,"partitions":"all","to":{"kind":"shift","by":1},"copy_skipped_to":""}`))
	post("/api/v1/kafka/{cluster}/groups/{group}/offsets/plan", offsetsPath+"plan", `{"topic":"","to":{"kind":"sideways"}}`)
	post("/api/v1/kafka/{cluster}/groups/{group}/offsets/apply", offsetsPath+"apply",
		`{"plan_id":`+strconv.Quote(offPlan.PlanID)+`,"reason":"contract"}`)
	post("/api/v1/kafka/{cluster}/groups/{group}/offsets/apply", offsetsPath+"apply", `{"plan_id":"nope","reason":"contract"}`)
	post("/api/v1/kafka/{cluster}/groups/{group}/offsets/approve", offsetsPath+"approve", `{"plan_id":"nope"}`)
	// No plan_id is a 400 for approve as for apply (approve said 404 'offset plan "" not found'),
	// and a body that is not JSON a 415 for each of the three.
	if r := post("/api/v1/kafka/{cluster}/groups/{group}/offsets/approve", offsetsPath+"approve", `{}`); r.status != http.StatusBadRequest {
		t.Errorf("approve without a plan_id: %d %s; want 400", r.status, r.body)
	}
	for _, op := range []string{"plan", "apply", "approve"} {
		check(base, "POST", "/api/v1/kafka/{cluster}/groups/{group}/offsets/"+op, offsetsPath+op, "text/plain", `{}`)
	}
	get("/api/v1/admin/doctor", "/api/v1/admin/doctor")
	post("/api/v1/admin/reload", "/api/v1/admin/reload", "")
	for _, q := range []string{"orders.DLT/records?partition=1&limit=5", "orders.DLT/records?partition=1&order=oldest&limit=5",
		"payments-dlt/records", "orders.retry-1/records", "orders/records?limit=2", "orders.DLT/records?partition=9",
		"orders.DLT/records?partition=all&limit=5"} {
		get("/api/v1/kafka/{cluster}/topics/{topic}/records", "/api/v1/kafka/main/topics/"+q)
	}
	get("/api/v1/kafka/{cluster}/topics/{topic}/error-groups", "/api/v1/kafka/main/topics/orders.DLT/error-groups")
	post("/api/v1/kafka/{cluster}/topics/{topic}/resolutions", "/api/v1/kafka/main/topics/orders.DLT/resolutions",
		`{"records":[{"partition":1,"offset":0}],"state":"ignored","reason":"contract"}`)
	post("/api/v1/kafka/{cluster}/topics/{topic}/resolutions", "/api/v1/kafka/main/topics/orders.DLT/resolutions", `{"state":"resolved"}`)
	get("/api/v1/kafka/{cluster}/topics/{topic}/records", "/api/v1/kafka/main/topics/orders.DLT/records?partition=1&state=ignored")
	post("/api/v1/kafka/{cluster}/topics/{topic}/notes", "/api/v1/kafka/main/topics/orders.DLT/notes",
		`{"error_group":{"exception_type":""},"text":"contract","link":"https://example.com/x"}`)
	post("/api/v1/kafka/{cluster}/topics/{topic}/notes", "/api/v1/kafka/main/topics/orders.DLT/notes", `{"text":""}`)
	get("/api/v1/kafka/{cluster}/topics/{topic}/notes", "/api/v1/kafka/main/topics/orders.DLT/notes")
	get("/api/v1/kafka/{cluster}/topics/{topic}/error-groups", "/api/v1/kafka/main/topics/orders.DLT/error-groups")
	for _, q := range []string{"filter=" + url.QueryEscape(`dead_letter.original_topic == "orders"`) + "&limit=3",
		"filter=" + url.QueryEscape(`offset >= 0`) + "&partition=1&order=oldest&max_scan=4", "filter=" + url.QueryEscape("key ==")} {
		get("/api/v1/kafka/{cluster}/topics/{topic}/records", "/api/v1/kafka/main/topics/orders.DLT/records?"+q)
	}
	get("/api/v1/kafka/{cluster}/topics/{topic}/export", "/api/v1/kafka/main/topics/orders.DLT/export?format=xml")
	get("/api/v1/kafka/{cluster}/topics/{topic}/export", "/api/v1/kafka/main/topics/nope/export")
	// A 200 export is NDJSON: each line is a record of the document's KafkaRecord.
	if r := do(t, nil, "GET", base+"/api/v1/kafka/main/topics/orders.DLT/export?partition=1", "", ""); r.status != http.StatusOK {
		t.Errorf("export: %d %s", r.status, r.body)
	} else {
		lines := strings.Split(strings.TrimSpace(r.body), "\n")
		for _, line := range lines {
			var v any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("export line %q: %v", line, err)
			}
			if err := doc.Components.Schemas["KafkaRecord"].Value.VisitJSON(v); err != nil {
				t.Errorf("export line does not match KafkaRecord: %v\n%s", err, line)
			}
		}
		if len(lines) < 2 {
			t.Errorf("export of partition 1: %d lines", len(lines))
		}
	}
	get("/api/v1/kafka/{cluster}/topics/{topic}/error-groups", "/api/v1/kafka/main/topics/payments-dlt/error-groups?max_scan=5")

	plan := post("/api/v1/replays/plan", "/api/v1/replays/plan",
		`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","partition":2,"from_offset":0,"to_offset":29},"filter":{"since":"30d"}}`)
	post("/api/v1/replays/plan", "/api/v1/replays/plan", `{"source":{"kind":"sqs"}}`)
	post("/api/v1/replays/plan", "/api/v1/replays/plan",
		`{"edit":{"set_headers":{"fixed-by":"contract"}},"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[{"partition":1,"offset":0}]}}`)
	// A redirect outside replay.allowed_destinations (none here): 403, naming the destination.
	if r := post("/api/v1/replays/plan", "/api/v1/replays/plan",
		`{"destination":{"kind":"kafka","topic":"payments"},"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT"}}`); r.status != http.StatusForbidden ||
		!strings.Contains(r.body, "allowed_destinations") {
		t.Errorf("a redirect outside allowed_destinations: %d %s", r.status, r.body)
	}
	post("/api/v1/replays/plan", "/api/v1/replays/plan",
		`{"source":{"kind":"outbox","outbox":"orders","ids":[`+strconv.FormatInt(ids[1], 10)+`]}}`)
	planID := decode[struct {
		PlanID string `json:"plan_id"`
	}](t, plan).PlanID
	job := decode[struct{ ID string }](t, post("/api/v1/replays", "/api/v1/replays",
		fmt.Sprintf(`{"plan_id":%q,"rate_per_second":1,"reason":"contract"}`, planID)))
	post("/api/v1/replays", "/api/v1/replays", `{"plan_id":"plan_missing","reason":"contract"}`)
	get("/api/v1/replays/{id}", "/api/v1/replays/"+url.PathEscape(job.ID))
	get("/api/v1/replays/{id}", "/api/v1/replays/job_nope")
	get("/api/v1/replays", "/api/v1/replays")
	get("/api/v1/replays/plans/{id}", "/api/v1/replays/plans/"+url.PathEscape(planID))
	get("/api/v1/replays/plans/{id}", "/api/v1/replays/plans/plan_nope")
	// A plan that is ready is no longer planning: cancelling it is a 409; an unknown one a 404.
	if r := post("/api/v1/replays/plans/{id}/cancel", "/api/v1/replays/plans/"+url.PathEscape(planID)+"/cancel", ""); r.status != http.StatusConflict {
		t.Errorf("cancelling a ready plan: %d %s", r.status, r.body)
	}
	post("/api/v1/replays/plans/{id}/cancel", "/api/v1/replays/plans/plan_nope/cancel", "")
	get("/api/v1/replicas", "/api/v1/replicas")
	post("/api/v1/replays/{id}/cancel", "/api/v1/replays/"+url.PathEscape(job.ID)+"/cancel", "") // running at 1/s: 200
	post("/api/v1/replays/{id}/cancel", "/api/v1/replays/job_nope/cancel", "")
	post("/api/v1/replays/{id}/approve", "/api/v1/replays/"+url.PathEscape(job.ID)+"/approve", "") // not awaiting: 409
	post("/api/v1/replays/{id}/approve", "/api/v1/replays/job_nope/approve", "")
	get("/api/v1/trace", "/api/v1/trace?aggregate_id=ord-10001")
	get("/api/v1/trace", "/api/v1/trace?message_id=no-such-message&since=1h")
	get("/api/v1/trace", "/api/v1/trace")
	get("/api/v1/notifications", "/api/v1/notifications")
	get("/api/v1/notifications", "/api/v1/notifications?limit=0")
	silence := decode[struct{ ID int64 }](t, post("/api/v1/silences", "/api/v1/silences",
		`{"matchers":{"kind":"kafka_group","group":"billing-service"},"duration":"2h","comment":"contract"}`))
	check(base, "DELETE", "/api/v1/silences/{id}", fmt.Sprintf("/api/v1/silences/%d", silence.ID), "", "")
	check(base, "DELETE", "/api/v1/silences/{id}", "/api/v1/silences/99999999", "", "")
	post("/api/v1/silences", "/api/v1/silences", `{"matchers":{"kind":"kafka_group","group":"billing-service"},"duration":"2h","comment":"contract"}`)
	post("/api/v1/silences", "/api/v1/silences", `{"matchers":{},"duration":"2h"}`)
	get("/api/v1/silences", "/api/v1/silences")
	get("/api/v1/archive", "/api/v1/archive?since=1h")
	get("/api/v1/archive", "/api/v1/archive?cursor=x")
	post("/api/v1/archive/{id}/restore", "/api/v1/archive/999/restore", `{"to":"dlq","reason":"contract"}`)
	post("/api/v1/archive/{id}/restore", "/api/v1/archive/999/restore", `{"to":"original","reason":"contract"}`)
	post("/api/v1/notifications/channels/{name}/test", "/api/v1/notifications/channels/nope/test", "")

	rbase, vhost, _ := rabbitConsole(t)
	rget := func(template, path string) response { t.Helper(); return check(rbase, "GET", template, path, "", "") }
	rabbittest.WaitFor(t, 20*time.Second, "a RabbitMQ sample", func(context.Context) bool {
		r := rget("/api/v1/rabbitmq/{broker}/queues", "/api/v1/rabbitmq/main/queues")
		return decode[apiQueues](t, r).SampledAt != nil
	})
	rget("/api/v1/rabbitmq/{broker}/queues", "/api/v1/rabbitmq/nope/queues")
	for _, q := range []string{"orders.dlq", "orders.work", "payments.retry", "payments.work", "invoices", "audit.events", "nope"} {
		p := queuePath(vhost, q)
		rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}", p)
		rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/history", p+"/history?since=1h")
	}
	rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/messages", queuePath(vhost, "orders.dlq")+"/messages?limit=20")
	rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/messages", queuePath(vhost, "orders.dlq")+"/messages?limit=20&reason=expired")
	rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/messages", queuePath(vhost, "invoices")+"/messages") // refused: 409
	rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/messages", queuePath(vhost, "orders.dlq")+"/messages?limit=0")
	rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/messages", queuePath(vhost, "orders.dlq")+"/messages?limit=5&filter="+
		url.QueryEscape(`dead_letter.reason != ""`))
	rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/messages", queuePath(vhost, "orders.dlq")+"/messages?filter="+url.QueryEscape("body."))
	rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/export", queuePath(vhost, "orders.dlq")+"/export?format=xml")
	rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/export", queuePath(vhost, "orders.dlq")+"/export?filter="+url.QueryEscape("nosuch"))
	rget("/api/v1/trace", "/api/v1/trace?message_id=no-such-message")
	notes := queuePath(vhost, "orders.dlq") + "/notes"
	check(rbase, "POST", "/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/notes", notes, "application/json",
		`{"message_id":"m-contract","text":"contract","link":"https://example.com/x"}`)
	check(rbase, "POST", "/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/notes", notes, "application/json", `{"text":""}`)
	rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/notes", notes)
	rget("/api/v1/rabbitmq/{broker}/queues/{vhost}/{queue}/notes", queuePath(vhost, "nope")+"/notes")
	check(rbase, "POST", "/api/v1/replays/plan", "/api/v1/replays/plan", "application/json",
		`{"action":"discard","source":{"kind":"rabbitmq","broker":"main","vhost":`+strconv.Quote(vhost)+`,"queue":"orders.dlq","limit":3}}`)

	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !covered[method+" "+path] {
				t.Errorf("%s %s was not checked against a real answer", method, path)
			}
		}
	}
}

func loadOpenAPI(t *testing.T, base string) *openapi3.T {
	t.Helper()
	r := do(t, nil, "GET", base+"/api/openapi.json", "", "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /api/openapi.json: %d %q", r.status, r.header.Get("Content-Type"))
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData([]byte(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatal(err)
	}
	return doc
}
