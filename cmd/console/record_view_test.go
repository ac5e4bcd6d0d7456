package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// hx is a GET as htmx sends it when a row is expanded, by client (nil: no session).
func hx(t *testing.T, client *http.Client, u string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("HX-Request", "true")
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, string(b), resp.Header}
}

// TestRecordViewsLoadWhenExpanded: a page of 500 dead letters, each with a 20 KB stack trace (in
// its header and decoded) and a 10 KB value, lists them as rows and loads a row's full view when
// it is expanded. Every view was inline before: this page was 500 × (trace twice, value twice with
// its edit form) — 25 MB of HTML. Each row's view is the record's, with its forms returning to the
// list; the record's path opened on its own is the record's page; a record gone since the list
// was read says so, and a path that names no record is a 404 saying what a record's address is.
func TestRecordViewsLoadWhenExpanded(t *testing.T) {
	ctx := waittest.Context(t, 2*time.Minute)
	const n = 500
	k := startKafka(t, map[string]int32{"orders.DLT": 2, "orders": 2})
	trace := strings.Repeat("\tat com.acme.orders.OrderListener.onMessage(OrderListener.java:42)\n", 300) // 20 KB
	value := `{"items":[` + strings.Repeat(`{"sku":"SKU-1","qty":2,"note":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},`, 150) + `{}]}`
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "orders.DLT", Partition: int32(i % 2), Key: fmt.Appendf(nil, "order-%d", i), Value: []byte(value),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.lang.StackOverflowError")},
				{Key: "kafka_dlt-exception-message", Value: fmt.Appendf(nil, "overflow %d", i)},
				{Key: "kafka_dlt-exception-stacktrace", Value: []byte(trace)}}})
	}
	cl := kfaketest.Client(t, k.Cluster(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\nkafka: [{name: main, brokers: [%q]}]\n",
		pgtest.NewDatabase(t), k.Addrs()[0]))

	list := paths.WithQuery(paths.KafkaTopic("main", "orders.DLT"), url.Values{"partition": {"all"}, "limit": {"500"}})
	page := do(t, nil, "GET", base+list, "", "")
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page.body))
	if page.status != 200 || err != nil {
		t.Fatalf("the list: %d %v", page.status, err)
	}
	rows, loading := doc.Find(`[data-testid="record-row"]`), doc.Find(`[data-testid="record-detail"] [data-testid="record-loading"]`)
	t.Logf("a page of %d records with 20 KB traces and 10 KB values: %d KB of HTML", rows.Length(), len(page.body)>>10)
	if rows.Length() != n || loading.Length() != n || doc.Find(`[data-testid="record"]`).Length() != 0 {
		t.Fatalf("%d rows, %d views to load, %d inline; want %d rows whose views load when expanded", rows.Length(), loading.Length(),
			doc.Find(`[data-testid="record"]`).Length(), n)
	}
	if len(page.body) > 2<<20 {
		t.Errorf("the list is %d KB: the rows alone should be well under 2 MB", len(page.body)>>10)
	}

	// A row's view: the record's own, read as the list was, its forms returning to the list.
	var checked int
	loading.EachWithBreak(func(i int, s *goquery.Selection) bool {
		if i%97 != 0 {
			return true
		}
		key, _ := s.Closest(`tr`).Attr("data-key")
		src, _ := s.Attr("hx-get")
		u, err := url.Parse(src)
		if err != nil || !strings.HasPrefix(u.Path, "/kafka/main/topics/orders.DLT/records/") || u.Query().Get("back") == "" {
			t.Errorf("row %s loads %q", key, src)
			return false
		}
		r := hx(t, nil, base+src)
		view, err := goquery.NewDocumentFromReader(strings.NewReader(r.body))
		if r.status != 200 || err != nil {
			t.Errorf("row %s's view: %d %.300s", key, r.status, r.body)
			return false
		}
		part, off, _ := strings.Cut(key, ":")
		back, _ := view.Find(`[data-testid="resolve-record"] input[name="back"]`).Attr("value")
		if h := view.Find(`[data-testid="record"] h2`).Text(); h != key ||
			view.Find(`[data-testid="dl-exception"]`).Text() != "java.lang.StackOverflowError" ||
			!strings.Contains(view.Find(`[data-testid="record-value"]`).Text(), `"sku": "SKU-1"`) ||
			view.Find(`[data-testid="resolve-record"] input[name="partition"]`).AttrOr("value", "") != part ||
			view.Find(`[data-testid="resolve-record"] input[name="offset"]`).AttrOr("value", "") != off ||
			back != u.Query().Get("back") || strings.Contains(r.body, "<html") {
			t.Errorf("row %s's view: heading %q, back %q (want %q): %.600s", key, h, back, u.Query().Get("back"), r.body)
		}
		checked++
		return true
	})
	if checked != 6 {
		t.Errorf("checked %d views", checked)
	}

	// Opened on its own (no htmx): the record's page, the record open on it.
	own := do(t, nil, "GET", base+paths.KafkaRecord("main", "orders.DLT", 1, 7), "", "")
	if loc := own.header.Get("Location"); own.status != http.StatusSeeOther || !strings.Contains(loc, "offset=7") || !strings.Contains(loc, "partition=1") {
		t.Fatalf("the record's path on its own: %d to %q", own.status, loc)
	}
	if r := do(t, nil, "GET", base+own.header.Get("Location"), "", ""); r.status != 200 ||
		!strings.Contains(r.body, `<h2 class="mono">1:7</h2>`) || !strings.Contains(r.body, `aria-expanded="true"`) {
		t.Errorf("the record's page: %d, the record not open on it", r.status)
	}

	// No record there: a 404 that says so, as a fragment where the view would have gone.
	for _, tc := range []struct{ path, want string }{
		{paths.KafkaRecord("main", "orders.DLT", 0, 100_000), "reload the list"},
		{paths.KafkaRecord("main", "orders.DLT", 9, 0), "reload the list"},
		{"/kafka/main/topics/orders.DLT/records/x/1", "partition and offset, both non-negative integers"},
		{"/kafka/main/topics/orders.DLT/records/0/-1", "partition and offset, both non-negative integers"},
		{paths.KafkaRecord("main", "nope", 0, 0), "nope"},
	} {
		r := hx(t, nil, base+tc.path)
		if r.status != http.StatusNotFound || !strings.Contains(r.body, tc.want) || strings.Contains(r.body, "<html") {
			t.Errorf("GET %s: %d %.400s; want a 404 fragment saying %q", tc.path, r.status, r.body, tc.want)
		}
	}
}
