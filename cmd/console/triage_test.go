package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/cmd/internal/devstack"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// deadLetterCluster is a kfake cluster with orders (the original topic) and orders.DLT, holding
// the dead letters produced by each call of the returned function: n records of one exception
// type, keyed and identified by prefix-i.
func deadLetterCluster(t *testing.T, ctx context.Context) (*devstack.Kafka, func(n int, typ, prefix string)) {
	t.Helper()
	k := startKafka(t, map[string]int32{"orders.DLT": 2, "orders": 2})
	cl := kfaketest.Client(t, k.Cluster())
	return k, func(n int, typ, prefix string) {
		t.Helper()
		var recs []*kgo.Record
		for i := range n {
			id := fmt.Sprintf("%s-%d", prefix, i)
			recs = append(recs, &kgo.Record{Topic: "orders.DLT", Key: []byte(id), Value: []byte(`{"messageId":"` + id + `"}`),
				Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
					{Key: "kafka_dlt-exception-fqcn", Value: []byte(typ)},
					{Key: "kafka_dlt-exception-message", Value: []byte(typ + ": failed " + id)}}})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

type recordsAnswer struct {
	Records []struct {
		Partition  int32
		Offset     int64
		Resolution *struct {
			State  string  `json:"state"`
			By     string  `json:"by"`
			At     *string `json:"at"`
			Reason string  `json:"reason"`
			JobID  string  `json:"job_id"`
		} `json:"resolution"`
	} `json:"records"`
}

// TestResolveDeadLetters: records resolved by record, error group and filter stop counting as
// open on the error groups, the DLT list, the overview and /metrics (the label-less series keeps
// counting every record); a replay job marks what it published replayed with its id; a viewer is
// refused every change; every change is audited.
func TestResolveDeadLetters(t *testing.T) {
	ctx := waittest.Context(t, 3*time.Minute)
	k, dead := deadLetterCluster(t, ctx)
	dead(6, "com.acme.PoisonException", "poison")
	dead(4, "java.net.SocketTimeoutException", "timeout")
	base := startConsole(t, sampledKafka(pgtest.NewDatabase(t), k)+basicAuth(""))
	api := base + "/api/v1/kafka/main/topics/orders.DLT"
	resolve := func(token, body string) response {
		t.Helper()
		return bearer(t, "POST", api+"/resolutions", token, body)
	}
	records := func(query string) recordsAnswer {
		t.Helper()
		r := bearer(t, "GET", api+"/records?partition=all&limit=500&"+query, "tok-viewer", "")
		if r.status != http.StatusOK {
			t.Fatalf("records %s: %d %s", query, r.status, r.body)
		}
		return decode[recordsAnswer](t, r)
	}
	groups := func() map[string]errorGroupCounts { t.Helper(); return errorGroupsOf(t, api) }
	dltOpen := func() (records, open int64) {
		t.Helper()
		c, ok := dltCountsOf(t, base, "orders.DLT")
		if !ok {
			t.Fatal("orders.DLT not listed")
		}
		return c.Records, c.Open
	}
	onFire := func() bool {
		return strings.Contains(bearer(t, "GET", base+"/api/v1/overview", "tok-viewer", "").body, "dead_letters/kafka/main/orders.DLT")
	}
	openSeries := series("redrive_dead_letters", "source", "kafka/main", "name", "orders.DLT", "state", "open")
	allSeries := series("redrive_dead_letters", "source", "kafka/main", "name", "orders.DLT")

	waittest.Until(t, 30*time.Second, "the sampler lists orders.DLT", func() bool { return scrape(t, base)[allSeries] == 10 })
	if m := scrape(t, base); m[openSeries] != 10 {
		t.Fatalf("open before any resolution: %v", m[openSeries])
	}
	if !onFire() {
		t.Fatal("orders.DLT is not on the overview before any resolution")
	}
	newGroup := func(typ string) bool {
		return strings.Contains(bearer(t, "GET", base+"/api/v1/overview", "tok-viewer", "").body, "new_error_group/kafka/main/orders.DLT/"+typ+"|")
	}
	waittest.Until(t, 30*time.Second, "the poison group is new on the overview", func() bool { return newGroup("com.acme.PoisonException") })
	all := records("")
	if len(all.Records) != 10 || all.Records[0].Resolution == nil || all.Records[0].Resolution.State != "open" || all.Records[0].Resolution.At != nil {
		t.Fatalf("records before any resolution: %+v", all)
	}

	t.Run("ViewerRefused", func(t *testing.T) {
		r := resolve("tok-viewer", `{"error_group":{"exception_type":"com.acme.PoisonException"},"state":"resolved","reason":"fixed"}`)
		if r.status != http.StatusForbidden {
			t.Fatalf("viewer: %d %s", r.status, r.body)
		}
		ar := bearer(t, "GET", base+"/api/v1/audit?actor=token:viewer-bot", "tok-admin", "")
		a := decode[struct{ Entries []auditRow }](t, ar)
		if len(a.Entries) == 0 || a.Entries[0].Outcome != "denied" || !strings.Contains(a.Entries[0].Action, "/resolutions") {
			t.Fatalf("the refusal's audit row: %s", ar.body)
		}
		if _, open := dltOpen(); open != 10 {
			t.Fatalf("a refused resolution changed the open count to %d", open)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		for body, want := range map[string]string{
			`{"state":"resolved","reason":"x"}`:                                              "exactly one of records, error_group or filter",
			`{"records":[{"partition":0,"offset":999}],"state":"resolved","reason":"x"}`:     "offset 999 is not in topic orders.DLT",
			`{"records":[{"partition":7,"offset":0}],"state":"resolved","reason":"x"}`:       "partition 7 is not in topic orders.DLT",
			`{"error_group":{"exception_type":"x"},"state":"replayed","reason":"x"}`:         "set by a replay job",
			`{"error_group":{"exception_type":"x"},"state":"closed","reason":"x"}`:           "must be open, resolved or ignored",
			`{"error_group":{"exception_type":"x"},"state":"resolved"}`:                      "reason",
			`{"filter":{"cel":"value.orderId =="},"state":"resolved","reason":"x"}`:          "filter",
			`{"records":[{"partition":0}],"state":"resolved","reason":"x"}`:                  "needs partition and offset",
			`{"records":[{"partition":0,"offset":0}],"state":"resolved","reason":"x","x":1}`: "unknown field",
		} {
			r := resolve("tok-operator", body)
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, want) {
				t.Errorf("%s: %d %s, want 400 saying %q", body, r.status, r.body, want)
			}
		}
	})

	// By record: two timeouts ignored.
	var timeouts [][2]int64
	byType := decode[struct {
		Records []struct {
			Partition  int32
			Offset     int64
			DeadLetter struct {
				ExceptionType string `json:"exception_type"`
			} `json:"dead_letter"`
		}
	}](t, bearer(t, "GET", api+"/records?partition=all&limit=500", "tok-viewer", ""))
	for _, r := range byType.Records {
		if r.DeadLetter.ExceptionType == "java.net.SocketTimeoutException" && len(timeouts) < 2 {
			timeouts = append(timeouts, [2]int64{int64(r.Partition), r.Offset})
		}
	}
	r := resolve("tok-operator", fmt.Sprintf(`{"records":[{"partition":%d,"offset":%d},{"partition":%d,"offset":%d}],"state":"ignored","reason":"load test noise"}`,
		timeouts[0][0], timeouts[0][1], timeouts[1][0], timeouts[1][1]))
	if r.status != http.StatusOK || !strings.Contains(r.body, `"updated":2`) {
		t.Fatalf("resolve by record: %d %s", r.status, r.body)
	}
	if ign := records("state=ignored"); len(ign.Records) != 2 || ign.Records[0].Resolution.By != "token:operator-bot" ||
		ign.Records[0].Resolution.Reason != "load test noise" || ign.Records[0].Resolution.At == nil {
		t.Fatalf("the ignored records: %+v %+v", ign, *ign.Records[0].Resolution)
	}
	if n := len(records("state=open").Records); n != 8 {
		t.Fatalf("%d open records after ignoring 2 of 10", n)
	}
	if g := groups()["java.net.SocketTimeoutException"]; g.Count != 4 || g.Open != 2 {
		t.Fatalf("the timeout group after ignoring 2: %+v", g)
	}

	// Filter scans, exports and plans see the resolution (the resolution variable of ops/search).
	scan := func(expr string) int {
		t.Helper()
		r := bearer(t, "GET", api+"/records?partition=all&limit=500&filter="+url.QueryEscape(expr), "tok-viewer", "")
		if r.status != http.StatusOK {
			t.Fatalf("scan %s: %d %s", expr, r.status, r.body)
		}
		return len(decode[recordsAnswer](t, r).Records)
	}
	if n, m := scan(`resolution == "ignored"`), scan(`resolution == "open"`); n != 2 || m != 8 {
		t.Fatalf("scans: %d ignored, %d open; want 2, 8", n, m)
	}
	export := bearer(t, "GET", api+"/export?filter="+url.QueryEscape(`resolution != "open"`), "tok-operator", "")
	if export.status != http.StatusOK || strings.Count(strings.TrimSpace(export.body), "\n")+1 != 2 {
		t.Fatalf("export of the settled records: %d %s", export.status, export.body)
	}
	openPlan := bearer(t, "POST", base+"/api/v1/replays/plan", "tok-operator",
		`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT"},"filter":{"cel":"resolution == \"open\" && dead_letter.exception_type == \"java.net.SocketTimeoutException\""}}`)
	if openPlan.status != http.StatusOK || !strings.Contains(openPlan.body, `"total":2`) {
		t.Fatalf("a plan of the open timeouts: %d %s", openPlan.status, openPlan.body)
	}

	// By error group: the poison ones resolved; again changes nothing.
	body := `{"error_group":{"exception_type":"com.acme.PoisonException"},"state":"resolved","reason":"fixed in 4.2.1"}`
	if r := resolve("tok-operator", body); r.status != http.StatusOK || !strings.Contains(r.body, `"updated":6`) {
		t.Fatalf("resolve by group: %d %s", r.status, r.body)
	}
	if r := resolve("tok-operator", body); r.status != http.StatusOK || !strings.Contains(r.body, `"updated":0`) || !strings.Contains(r.body, `"matched":6`) {
		t.Fatalf("resolve the group again: %d %s", r.status, r.body)
	}
	if g := groups(); g["com.acme.PoisonException"].Open != 0 || g["com.acme.PoisonException"].Count != 6 {
		t.Fatalf("the poison group after resolving it: %+v", g)
	}
	if newGroup("com.acme.PoisonException") || !newGroup("java.net.SocketTimeoutException") {
		t.Fatal("the resolved group is still new on the overview, or the open one is not")
	}
	if recs, open := dltOpen(); recs != 10 || open != 2 {
		t.Fatalf("the DLT list: %d records, %d open; want 10, 2", recs, open)
	}
	if m := scrape(t, base); m[openSeries] != 2 || m[allSeries] != 10 {
		t.Fatalf("metrics: open %v, all %v; want 2, 10", m[openSeries], m[allSeries])
	}

	// By filter (CEL): the timeouts, the two ignored ones included, resolved.
	r = resolve("tok-operator", `{"filter":{"cel":"dead_letter.exception_type.endsWith(\"TimeoutException\")"},"state":"resolved","reason":"INC-2231 closed"}`)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"updated":4`) || !strings.Contains(r.body, `"scanned":10`) {
		t.Fatalf("resolve by filter: %d %s", r.status, r.body)
	}
	if recs, open := dltOpen(); recs != 10 || open != 0 {
		t.Fatalf("the DLT list: %d records, %d open; want 10, 0", recs, open)
	}
	if m := scrape(t, base); m[openSeries] != 0 || m[allSeries] != 10 {
		t.Fatalf("metrics: open %v, all %v; want 0, 10", m[openSeries], m[allSeries])
	}
	if onFire() {
		t.Fatal("orders.DLT is still on the overview with every record resolved")
	}
	// The topic page shows open records by default: none now.
	client, _ := signedIn(t, base, "vera")
	page := do(t, client, "GET", base+"/kafka/main/topics/orders.DLT?partition=all", "", "")
	if page.status != http.StatusOK || strings.Contains(page.body, `data-testid="record-row"`) || !strings.Contains(page.body, "Showing open records") {
		t.Fatalf("the topic page by default: %d (record rows: %d)", page.status, strings.Count(page.body, `data-testid="record-row"`))
	}
	if page := do(t, client, "GET", base+"/kafka/main/topics/orders.DLT?partition=all&state=resolved", "", ""); strings.Count(page.body, `data-testid="record-row"`) != 10 {
		t.Fatalf("the topic page, state=resolved: %d record rows", strings.Count(page.body, `data-testid="record-row"`))
	}
	if page := do(t, client, "GET", base+"/kafka/main/topics/orders.DLT?state=bogus", "", ""); page.status != http.StatusBadRequest {
		t.Fatalf("state=bogus: %d", page.status)
	}

	// A new dead letter of a resolved group is open: the incident is back.
	dead(1, "com.acme.PoisonException", "again")
	waittest.Until(t, 30*time.Second, "the new record counts as open", func() bool { _, open := dltOpen(); return open == 1 })
	waittest.Until(t, 30*time.Second, "orders.DLT back on the overview", onFire)
	waittest.Until(t, 30*time.Second, "the poison group new again on the overview", func() bool { return newGroup("com.acme.PoisonException") })

	t.Run("ReplayMarksReplayed", func(t *testing.T) {
		plan := bearer(t, "POST", base+"/api/v1/replays/plan", "tok-operator",
			`{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT"},"filter":{"exception_type":"com.acme.PoisonException"}}`)
		p := decode[struct {
			PlanID string `json:"plan_id"`
		}](t, plan)
		start := bearer(t, "POST", base+"/api/v1/replays", "tok-operator", fmt.Sprintf(`{"plan_id":%q,"rate_per_second":500,"reason":"fixed"}`, p.PlanID))
		if plan.status != 200 || start.status != 200 {
			t.Fatalf("plan %d %s; start %d %s", plan.status, plan.body, start.status, start.body)
		}
		job := decode[struct{ ID string }](t, start)
		waittest.Until(t, 30*time.Second, "the job finishes", func() bool {
			return strings.Contains(bearer(t, "GET", base+"/api/v1/replays/"+job.ID, "tok-viewer", "").body, `"status":"done"`)
		})
		replayed := records("state=replayed")
		if len(replayed.Records) != 7 {
			t.Fatalf("%d records replayed, want the 7 poison ones: %+v", len(replayed.Records), replayed)
		}
		for _, r := range replayed.Records {
			if r.Resolution.JobID != job.ID || r.Resolution.By != "token:operator-bot" {
				t.Fatalf("a replayed record's resolution: %+v (job %s)", r.Resolution, job.ID)
			}
		}
		if _, open := dltOpen(); open != 0 {
			t.Fatalf("%d open after the replay", open)
		}
		if g := groups()["com.acme.PoisonException"]; g.Open != 0 || g.Count != 7 {
			t.Fatalf("the poison group after the replay: %+v", g)
		}
	})

	t.Run("Audited", func(t *testing.T) {
		// record, group, group again (0 changed), filter.
		if ok, rows := okAudits(t, base, "kafka.resolve", "kafka/main/orders.DLT", "token:operator-bot"); ok != 4 {
			t.Fatalf("%d ok kafka.resolve audit entries, want 4: %+v", ok, rows)
		}
	})
}

// poisonConsole is the notes tests' console: basic auth, sampling a cluster whose orders.DLT holds
// three dead letters of one error group, com.acme.PoisonException (poison-0…2).
func poisonConsole(t *testing.T) (base string) {
	t.Helper()
	k, dead := deadLetterCluster(t, waittest.Context(t, 2*time.Minute))
	dead(3, "com.acme.PoisonException", "poison")
	return startConsole(t, sampledKafka(pgtest.NewDatabase(t), k)+basicAuth(""))
}

// TestNotes: a note on an error group and one on a record are shown where each appears (the
// error-groups API and page, the record on the topic page), escaped; a note's link must be a web
// link; a viewer is refused; each note is audited with its text.
func TestNotes(t *testing.T) {
	base := poisonConsole(t)
	api := base + "/api/v1/kafka/main/topics/orders.DLT/notes"
	groupNote := `{"error_group":{"exception_type":"com.acme.PoisonException"},"text":"investigating: INC-2231, fix in 4.2.1 <script>alert(1)</script>","link":"https://tracker.example/INC-2231"}`
	if r := bearer(t, "POST", api, "tok-viewer", groupNote); r.status != http.StatusForbidden {
		t.Fatalf("viewer: %d %s", r.status, r.body)
	}
	for body, want := range map[string]string{
		`{"error_group":{"exception_type":"x"},"text":"  "}`:                                    "text",
		`{"error_group":{"exception_type":"x"},"text":"t","link":"javascript:alert(1)"}`:        "must be an http or https URL",
		`{"error_group":{"exception_type":"x"},"record":{"partition":0,"offset":0},"text":"t"}`: "exactly one of error_group or record",
		`{"text":"t"}`: "exactly one of error_group or record",
		`{"record":{"partition":-1,"offset":0},"text":"t"}`:                                 "must not be negative",
		`{"error_group":{"exception_type":"x"},"text":"` + strings.Repeat("x", 2001) + `"}`: "at most 2000 characters",
	} {
		if r := bearer(t, "POST", api, "tok-operator", body); r.status != http.StatusBadRequest || !strings.Contains(r.body, want) {
			t.Errorf("%.80s: %d %s, want 400 saying %q", body, r.status, r.body, want)
		}
	}
	r := bearer(t, "POST", api, "tok-operator", groupNote)
	note := decode[struct {
		ID         int64
		ErrorGroup *struct {
			ExceptionType string `json:"exception_type"`
		} `json:"error_group"`
		By, Text, Link string
	}](t, r)
	if r.status != http.StatusOK || note.ID == 0 || note.ErrorGroup == nil || note.By != "token:operator-bot" || note.Link != "https://tracker.example/INC-2231" {
		t.Fatalf("group note: %d %s", r.status, r.body)
	}
	if r := bearer(t, "POST", api, "tok-operator", `{"record":{"partition":0,"offset":0},"text":"this one has a bad customer id"}`); r.status != http.StatusOK {
		t.Fatalf("record note: %d %s", r.status, r.body)
	}
	list := bearer(t, "GET", api, "tok-viewer", "")
	if !strings.Contains(list.body, "INC-2231") || !strings.Contains(list.body, `"record":{"partition":0,"offset":0}`) {
		t.Fatalf("notes: %s", list.body)
	}
	groups := bearer(t, "GET", base+"/api/v1/kafka/main/topics/orders.DLT/error-groups", "tok-viewer", "")
	if !strings.Contains(groups.body, `"notes":[{"id":`) || !strings.Contains(groups.body, "fix in 4.2.1") {
		t.Fatalf("error groups carry no note: %s", groups.body)
	}
	client, _ := signedIn(t, base, "vera")
	page := do(t, client, "GET", base+"/kafka/main/topics/orders.DLT/errors", "", "")
	if !strings.Contains(page.body, `data-testid="note-text">investigating: INC-2231, fix in 4.2.1 &lt;script&gt;`) ||
		!strings.Contains(page.body, `href="https://tracker.example/INC-2231"`) || strings.Contains(page.body, "<script>alert(1)") {
		t.Fatalf("the errors page does not show the note escaped:\n%s", page.body)
	}
	// The topic page shows the record's view with the note (a page of one record) or loads it
	// when the record's row is expanded.
	records := do(t, client, "GET", base+"/kafka/main/topics/orders.DLT?partition=0&limit=500", "", "")
	view := paths.KafkaRecord("main", "orders.DLT", 0, 0)
	if !strings.Contains(records.body, "this one has a bad customer id") && !strings.Contains(records.body, `hx-get="`+view+`?`) {
		t.Fatalf("the topic page neither shows the record's note nor loads its view %s", view)
	}
	if r := hx(t, client, base+view); r.status != http.StatusOK || !strings.Contains(r.body, "this one has a bad customer id") {
		t.Fatalf("the record's view does not show its note: %d", r.status)
	}
	a := decode[struct{ Entries []auditRow }](t, bearer(t, "GET", base+"/api/v1/audit?action=kafka.note", "tok-admin", ""))
	if len(a.Entries) != 2 || a.Entries[0].Outcome != "ok" || a.Entries[1].Detail["text"] != "investigating: INC-2231, fix in 4.2.1 <script>alert(1)</script>" {
		t.Fatalf("the notes' audit: %+v", a.Entries)
	}
}

// A note names a topic and, on a record, a record that exist, as a resolution does: a note on
// topic "nope", or on an offset past the end, was a 200 with an audit row.
func TestKafkaNotesNameWhatExists(t *testing.T) {
	base := poisonConsole(t)
	api := base + "/api/v1/kafka/main/topics/"
	for _, tc := range []struct {
		topic, body string
		status      int
		want        string
	}{
		{"nope", `{"record":{"partition":0,"offset":0},"text":"x"}`, http.StatusNotFound, `topic \"nope\" not found`},
		{"nope", `{"error_group":{"exception_type":"x"},"text":"x"}`, http.StatusNotFound, `topic \"nope\" not found`},
		{"orders.DLT", `{"record":{"partition":0,"offset":50},"text":"x"}`, http.StatusBadRequest, "record: partition 0 offset 50 is not in topic orders.DLT (offsets "},
		{"orders.DLT", `{"record":{"partition":7,"offset":0},"text":"x"}`, http.StatusBadRequest, "record: partition 7 is not in topic orders.DLT (it has 2)"},
	} {
		r := bearer(t, "POST", api+tc.topic+"/notes", "tok-operator", tc.body)
		if r.status != tc.status || !strings.Contains(r.body, tc.want) {
			t.Errorf("%s %s: %d %s, want %d saying %q", tc.topic, tc.body, r.status, r.body, tc.status, tc.want)
		}
	}
	if r := bearer(t, "GET", base+"/api/v1/audit?action=kafka.note", "tok-admin", ""); strings.Contains(r.body, `"outcome":"ok"`) {
		t.Errorf("a refused note was audited: %s", r.body)
	}
	if r := bearer(t, "POST", api+"orders.DLT/notes", "tok-operator", `{"error_group":{"exception_type":"com.acme.PoisonException"},"text":"known"}`); r.status != http.StatusOK {
		t.Errorf("a note on an error group of orders.DLT: %d %s", r.status, r.body)
	}
}

// TestQueueNotes: notes on a DLQ's error group and on one of its messages (by message id) are
// shown where each appears on the messages page, escaped; the API lists them; bad input is a
// 400 in words; a viewer is refused; each note is audited with its text; the queue is left as
// it was.
func TestQueueNotes(t *testing.T) {
	ctx := waittest.Context(t, 2*time.Minute)
	base, vhost, ch := dlqConsole(t, ctx, 2, `{"n":%d}`, basicAuth(""))
	api := base + "/api/v1/rabbitmq/main/queues/" + url.PathEscape(vhost) + "/orders.dlq/notes"
	groupNote := `{"error_group":{"reason":"rejected","exception_message":""},"text":"investigating: INC-2231 <script>alert(1)</script>","link":"https://tracker.example/INC-2231"}`
	if r := bearer(t, "POST", api, "tok-viewer", groupNote); r.status != http.StatusForbidden {
		t.Fatalf("viewer: %d %s", r.status, r.body)
	}
	for body, want := range map[string]string{
		`{"message_id":"m-0","text":"  "}`:                                    "text",
		`{"message_id":"m-0","text":"t","link":"javascript:alert(1)"}`:        "must be an http or https URL",
		`{"error_group":{"reason":"rejected"},"message_id":"m-0","text":"t"}`: "exactly one of error_group or message_id",
		`{"text":"t"}`: "exactly one of error_group or message_id",
		`{"message_id":"m-0","text":"` + strings.Repeat("x", 2001) + `"}`:     "at most 2000 characters",
		`{"message_id":"m-0","text":"t","record":{"partition":0,"offset":0}}`: "unknown field",
	} {
		if r := bearer(t, "POST", api, "tok-operator", body); r.status != http.StatusBadRequest || !strings.Contains(r.body, want) {
			t.Errorf("%.80s: %d %s, want 400 saying %q", body, r.status, r.body, want)
		}
	}
	if r := bearer(t, "POST", base+"/api/v1/rabbitmq/nope/queues/x/y/notes", "tok-operator", `{"message_id":"m-0","text":"t"}`); r.status != http.StatusNotFound {
		t.Fatalf("an unknown broker: %d %s", r.status, r.body)
	}
	r := bearer(t, "POST", api, "tok-operator", groupNote)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"error_group":{"reason":"rejected","exception_message":""}`) ||
		!strings.Contains(r.body, `"by":"token:operator-bot"`) {
		t.Fatalf("group note: %d %s", r.status, r.body)
	}
	if r := bearer(t, "POST", api, "tok-operator", `{"message_id":"m-1","text":"this one has a bad customer id"}`); r.status != http.StatusOK ||
		!strings.Contains(r.body, `"message_id":"m-1"`) {
		t.Fatalf("message note: %d %s", r.status, r.body)
	}
	list := bearer(t, "GET", api, "tok-viewer", "")
	if !strings.Contains(list.body, "INC-2231") || !strings.Contains(list.body, `"message_id":"m-1"`) {
		t.Fatalf("notes: %s", list.body)
	}
	client, _ := signedIn(t, base, "vera")
	page := do(t, client, "GET", base+"/rabbitmq/main/queues/"+url.PathEscape(vhost)+"/orders.dlq/messages", "", "")
	if !strings.Contains(page.body, `data-testid="note-text">investigating: INC-2231 &lt;script&gt;`) || strings.Contains(page.body, "<script>alert(1)") ||
		!strings.Contains(page.body, `href="https://tracker.example/INC-2231"`) || !strings.Contains(page.body, "this one has a bad customer id") {
		t.Fatalf("the messages page does not show the notes escaped:\n%.3000s", page.body)
	}
	if strings.Count(page.body, "this one has a bad customer id") != 1 {
		t.Fatal("the message note shows on more than its message")
	}
	a := decode[struct{ Entries []auditRow }](t, bearer(t, "GET", base+"/api/v1/audit?action=rabbitmq.note", "tok-admin", ""))
	if len(a.Entries) != 2 || a.Entries[0].Outcome != "ok" || a.Entries[1].Detail["text"] != "investigating: INC-2231 <script>alert(1)</script>" {
		t.Fatalf("the notes' audit: %+v", a.Entries)
	}
	rabbittest.WaitDepth(t, ch, "orders.dlq", 2, 10*time.Second)
}
