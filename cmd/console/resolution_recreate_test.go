package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/cmd/internal/devstack"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// produceDeadLetters writes n dead letters of exception type typ to topic (partition -1: the
// key's), keyed prefix-i, through a client of its own (one that never saw an earlier topic of
// the name).
func produceDeadLetters(t *testing.T, ctx context.Context, k *devstack.Kafka, topic string, partition int32, n int, typ, prefix string) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(k.Addrs()...)}
	if partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Key: []byte(id), Value: []byte(`{"messageId":"` + id + `"}`),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("payments")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte(typ)},
				{Key: "kafka_dlt-exception-message", Value: []byte("failed " + id)}}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// A topic deleted and created again under the same name is another topic: the resolutions of the
// records of the first (by record and by error group) are not the second's. Its new records are
// open on the records API (state and reason), in the state filter, in filter scans and exports,
// on the DLT list, in the error groups, the overview and /metrics, and the two open counts agree.
// New marks then count for the new topic.
func TestResolutionsDoNotOutliveTheirTopic(t *testing.T) {
	ctx := waittest.Context(t, 3*time.Minute)
	const topic = "payments.DLT"
	k := startKafka(t, map[string]int32{topic: 2, "payments": 1})
	produceDeadLetters(t, ctx, k, topic, -1, 30, "E.OldGen", "old")
	base := startConsole(t, sampledKafka(pgtest.NewDatabase(t), k)+basicAuth(""))
	api := base + "/api/v1/kafka/main/topics/" + topic
	resolve := func(body string) string {
		t.Helper()
		r := bearer(t, "POST", api+"/resolutions", "tok-operator", body)
		if r.status != http.StatusOK {
			t.Fatalf("resolve %s: %d %s", body, r.status, r.body)
		}
		return r.body
	}
	records := func(query string) (recordsAnswer, bool) {
		t.Helper()
		r := bearer(t, "GET", api+"/records?partition=all&limit=500&"+query, "tok-viewer", "")
		if r.status != http.StatusOK {
			return recordsAnswer{}, false // a listing within the metadata's age of the recreation
		}
		return decode[recordsAnswer](t, r), true
	}
	groups := func() map[string]errorGroupCounts { t.Helper(); return errorGroupsOf(t, api) }
	dltOpen := func() (records, open int64) {
		t.Helper()
		if c, ok := dltCountsOf(t, base, topic); ok {
			return c.Records, c.Open
		}
		return -1, -1
	}
	openSeries := series("redrive_dead_letters", "source", "kafka/main", "name", topic, "state", "open")
	allSeries := series("redrive_dead_letters", "source", "kafka/main", "name", topic)
	onFire := func() bool {
		return strings.Contains(bearer(t, "GET", base+"/api/v1/overview", "tok-viewer", "").body, "dead_letters/kafka/main/"+topic)
	}

	// The first topic: three records resolved by record, then its only error group ignored.
	first, ok := records("")
	if !ok || len(first.Records) != 30 {
		t.Fatalf("the first topic's records: %+v", first)
	}
	var refs []string
	for _, r := range first.Records[:3] {
		refs = append(refs, fmt.Sprintf(`{"partition":%d,"offset":%d}`, r.Partition, r.Offset))
	}
	resolve(`{"records":[` + strings.Join(refs, ",") + `],"state":"resolved","reason":"old gen resolved"}`)
	resolve(`{"error_group":{"exception_type":"E.OldGen"},"state":"ignored","reason":"old gen ignore"}`)
	if recs, open := dltOpen(); recs != 30 || open != 0 {
		t.Fatalf("the first topic on the DLT list: %d records, %d open; want 30, 0", recs, open)
	}
	waittest.Until(t, 30*time.Second, "the sampler counts the first topic settled", func() bool {
		m := scrape(t, base)
		return m[allSeries] == 30 && m[openSeries] == 0
	})

	// Deleted, created again with 1 partition, 8 new records of another type.
	adm := kadm.NewClient(kfaketest.Client(t, k.Cluster()))
	if _, err := adm.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceDeadLetters(t, ctx, k, topic, 0, 8, "E.NewGen", "new")

	var second recordsAnswer
	waittest.Until(t, 30*time.Second, "the records API lists the new topic's 8 records", func() bool {
		second, ok = records("")
		return ok && len(second.Records) == 8
	})
	for _, r := range second.Records {
		if r.Resolution == nil || r.Resolution.State != "open" || r.Resolution.Reason != "" || r.Resolution.By != "" {
			t.Fatalf("new record %d/%d: %+v; want open, never marked", r.Partition, r.Offset, r.Resolution)
		}
	}
	if open, _ := records("state=open"); len(open.Records) != 8 {
		t.Fatalf("state=open lists %d of the 8 new records", len(open.Records))
	}
	for _, st := range []string{"resolved", "ignored"} {
		if got, _ := records("state=" + st); len(got.Records) != 0 {
			t.Fatalf("state=%s lists %d new records", st, len(got.Records))
		}
	}
	waittest.Until(t, 30*time.Second, "the DLT list shows the new topic", func() bool { recs, _ := dltOpen(); return recs == 8 })
	recs, dltOpenCount := dltOpen()
	g := groups()
	if recs != 8 || dltOpenCount != 8 || g["E.NewGen"].Count != 8 || g["E.NewGen"].Open != 8 {
		t.Fatalf("open counts: DLT list %d of %d, error group %+v; want 8 of 8 in both", dltOpenCount, recs, g["E.NewGen"])
	}
	scan := func(expr string) int {
		t.Helper()
		got, ok := records("filter=" + url.QueryEscape(expr))
		if !ok {
			t.Fatalf("scan %s failed", expr)
		}
		return len(got.Records)
	}
	if open, settled := scan(`resolution == "open"`), scan(`resolution != "open"`); open != 8 || settled != 0 {
		t.Fatalf("filter scans: %d open, %d not open; want 8, 0", open, settled)
	}
	if export := bearer(t, "GET", api+"/export?filter="+url.QueryEscape(`resolution == "open"`), "tok-operator", ""); export.status != http.StatusOK ||
		strings.Count(strings.TrimSpace(export.body), "\n")+1 != 8 {
		t.Fatalf("export of the open records: %d %s", export.status, export.body)
	}
	waittest.Until(t, 30*time.Second, "the sampler counts the new topic's records open", func() bool {
		m := scrape(t, base)
		return m[allSeries] == 8 && m[openSeries] == 8
	})
	if !onFire() {
		t.Fatal("the new topic's open dead letters are not on the overview")
	}

	// A mark on the new topic counts for it, in place of the old one at the same offset.
	if body := resolve(`{"records":[{"partition":0,"offset":0}],"state":"resolved","reason":"new gen resolved"}`); !strings.Contains(body, `"updated":1`) {
		t.Fatalf("resolving new-0: %s", body)
	}
	now, _ := records("")
	if r := now.Records; len(r) != 8 || resolutionAt(now, 0, 0) != "resolved/new gen resolved" || resolutionAt(now, 0, 1) != "open/" {
		t.Fatalf("after resolving new-0: %s, %s", resolutionAt(now, 0, 0), resolutionAt(now, 0, 1))
	}
	if _, open := dltOpen(); open != 7 || groups()["E.NewGen"].Open != 7 {
		t.Fatalf("after resolving new-0: DLT list %d open, error group %+v; want 7", open, groups()["E.NewGen"])
	}
}

// errorGroupCounts is an error group of GET …/error-groups: its records and how many are open.
type errorGroupCounts struct {
	ExceptionType string `json:"exception_type"`
	Count, Open   int64
}

// errorGroupsOf reads the error groups of the topic at api (…/topics/{topic}), by exception type.
func errorGroupsOf(t *testing.T, api string) map[string]errorGroupCounts {
	t.Helper()
	v := decode[struct{ Groups []errorGroupCounts }](t, bearer(t, "GET", api+"/error-groups", "tok-viewer", ""))
	out := map[string]errorGroupCounts{}
	for _, g := range v.Groups {
		out[g.ExceptionType] = g
	}
	return out
}

// dltCounts is a topic of the DLT list: its records and how many are open.
type dltCounts struct {
	Topic         string
	Records, Open int64
}

// dltCountsOf reads topic's counts from cluster main's DLT list; ok is false when it is not listed.
func dltCountsOf(t *testing.T, base, topic string) (c dltCounts, ok bool) {
	t.Helper()
	v := decode[struct{ Topics []dltCounts }](t, bearer(t, "GET", base+"/api/v1/kafka/main/dead-letter-topics", "tok-viewer", ""))
	for _, tp := range v.Topics {
		if tp.Topic == topic {
			return tp, true
		}
	}
	return dltCounts{}, false
}

// resolutionAt is the state/reason of the record at partition p, offset o of a.
func resolutionAt(a recordsAnswer, p int32, o int64) string {
	for _, r := range a.Records {
		if r.Partition == p && r.Offset == o && r.Resolution != nil {
			return r.Resolution.State + "/" + r.Resolution.Reason
		}
	}
	return "missing"
}

// A record whose exception type holds a NUL is marked under its cleaned type (the store keeps no
// NUL): its error group counts it settled all the same, and the group can be named without it.
func TestResolvedGroupWithNulInType(t *testing.T) {
	ctx := waittest.Context(t, 2*time.Minute)
	const topic = "nul.DLT"
	k := startKafka(t, map[string]int32{topic: 1})
	produceDeadLetters(t, ctx, k, topic, 0, 2, "E.Nul\x00Type", "nul")
	base := startConsole(t, sampledKafka(pgtest.NewDatabase(t), k)+basicAuth(""))
	api := base + "/api/v1/kafka/main/topics/" + topic
	open := func() (count, open int64) {
		t.Helper()
		g, ok := errorGroupsOf(t, api)["E.Nul\x00Type"]
		if !ok {
			t.Fatal("the NUL group is not listed")
		}
		return g.Count, g.Open
	}
	r := bearer(t, "POST", api+"/resolutions", "tok-operator", `{"records":[{"partition":0,"offset":0}],"state":"resolved","reason":"fixed"}`)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"updated":1`) {
		t.Fatalf("resolve the first: %d %s", r.status, r.body)
	}
	if c, o := open(); c != 2 || o != 1 {
		t.Fatalf("the NUL group after resolving 1 of 2: %d records, %d open; want 2, 1", c, o)
	}
	r = bearer(t, "POST", api+"/resolutions", "tok-operator", `{"error_group":{"exception_type":"E.NulType"},"state":"resolved","reason":"fixed"}`)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"matched":2`) || !strings.Contains(r.body, `"updated":1`) {
		t.Fatalf("resolve the group by its cleaned type: %d %s", r.status, r.body)
	}
	if c, o := open(); c != 2 || o != 0 {
		t.Fatalf("the NUL group after resolving it: %d records, %d open; want 2, 0", c, o)
	}
}
