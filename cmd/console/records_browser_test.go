package main

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// key presses one key on the page, as a person would (not on a form field).
func key(k string) chromedp.Action[chromedp.Void] { return chromedp.KeyEvent(k) }

// The DLT browser is a table: one row per record, expanded in place with Enter, ticked with x,
// moved through with j/k; the ticked rows are what "Plan replay of selected" plans.
func TestBrowserRecordTable(t *testing.T) {
	base := kafkaConsole(t)
	ctx, _ := newBrowser(t)
	act(t, ctx,
		chromedp.Navigate(base+"/kafka/main/topics/orders.DLT?partition=1&order=oldest&limit=20"),
		chromedp.WaitVisible(`[data-testid="records-table"]`),
	)
	rows := countOf(t, ctx, `[data-testid="record-row"]`)
	shown := must(t, ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('[data-testid="record-detail"]')].filter(d => !d.hidden).length`))
	disabled := must(t, ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid="plan-selected"] button').disabled`))
	if rows != 20 || shown != 0 || !disabled {
		t.Fatalf("%d rows, %d expanded, plan button disabled %v; want 20 collapsed rows and a disabled button", rows, shown, disabled)
	}
	// j selects the first row, Enter expands it: the full decoded view is under it.
	act(t, ctx, key("j"), key(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`[data-testid="record-detail"] [data-testid="dl-exception"]`)))
	exception := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="record-detail"] [data-testid="dl-exception"]`)))
	rowException := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="record-row"] [data-testid="row-exception"]`)))
	if !strings.HasSuffix(exception, rowException) || !strings.Contains(exception, "Exception") {
		t.Errorf("expanded exception %q, row shows %q", exception, rowException)
	}
	screenshot(t, ctx, "kafka-dlt-table")
	// x ticks the current row; j then x ticks the second; Enter folds the first again.
	act(t, ctx, key("x"), key("j"), key("x"), key("j"), key("j"), key("k"))
	ticked := must(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="select-record"]:checked')].map(b => b.value)`))
	count := must(t, ctx, chromedp.Text(`[data-testid="plan-selected"] [data-check-count]`))
	current := must(t, ctx, chromedp.Evaluate[int](`[...document.querySelectorAll('[data-testid="record-row"]')].findIndex(r => r.classList.contains('is-current'))`))
	if len(ticked) != 2 || count != "2" || current != 2 {
		t.Fatalf("ticked %v (count %q), current row %d; want the first two ticked and the third current", ticked, count, current)
	}
	// Sorting by size keeps each record's full view under its own row.
	act(t, ctx, chromedp.Click(`[data-testid="records-table"] thead th:nth-child(7)`))
	paired := must(t, ctx, chromedp.Evaluate[bool](`[...document.querySelectorAll('[data-testid="record-row"]')].every(r =>
		r.nextElementSibling && r.nextElementSibling.dataset.testid === "record-detail" &&
		r.nextElementSibling.dataset.key === r.dataset.key &&
		(!r.nextElementSibling.querySelector('h2') || r.nextElementSibling.querySelector('h2').textContent === r.dataset.key))`))
	if !paired {
		t.Error("after sorting, a record's detail row is not under its own row")
	}
	header, items := planSelected(t, ctx)
	screenshot(t, ctx, "replay-plan-selected")
	if !strings.Contains(header, "2 selected record(s)") {
		t.Fatalf("plan of the ticked rows: %q", header)
	}
	for _, v := range ticked {
		if !strings.Contains(items, "/"+strings.ReplaceAll(v, ":", "/")) {
			t.Errorf("the plan does not list ticked record %s: %q", v, items)
		}
	}
}

// partition=all merges the topic's partitions newest first by timestamp, in the page and the API;
// the selector shows each partition's count, and an error group's Records link opens it.
func TestBrowserTopicAllPartitions(t *testing.T) {
	base := kafkaConsole(t)
	api := decode[struct {
		Records []struct {
			Partition int32     `json:"partition"`
			Offset    int64     `json:"offset"`
			Timestamp time.Time `json:"timestamp"`
		} `json:"records"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Records   int64 `json:"records"`
		} `json:"partitions"`
		NextCursor *string `json:"next_cursor"`
	}](t, do(t, nil, "GET", base+"/api/v1/kafka/main/topics/orders.DLT/records?partition=all&limit=40", "", ""))
	parts := map[int32]bool{}
	for i, r := range api.Records {
		parts[r.Partition] = true
		if i > 0 && r.Timestamp.After(api.Records[i-1].Timestamp) {
			t.Errorf("API record %d (%d:%d at %s) is newer than the one before it", i, r.Partition, r.Offset, r.Timestamp)
		}
	}
	if len(api.Records) != 40 || len(parts) < 2 || len(api.Partitions) < 2 || api.NextCursor == nil {
		t.Fatalf("API across partitions: %d records from %d partitions, %d partitions listed, next %v", len(api.Records), len(parts), len(api.Partitions), api.NextCursor)
	}
	next := decode[struct {
		Records []struct {
			Partition int32     `json:"partition"`
			Timestamp time.Time `json:"timestamp"`
		} `json:"records"`
	}](t, do(t, nil, "GET", base+"/api/v1/kafka/main/topics/orders.DLT/records?partition=all&limit=40&cursor="+url.QueryEscape(*api.NextCursor), "", ""))
	if len(next.Records) == 0 || next.Records[0].Timestamp.After(api.Records[len(api.Records)-1].Timestamp) {
		t.Errorf("the next page does not go on where the first ended: %d records", len(next.Records))
	}

	ctx, _ := newBrowser(t)
	act(t, ctx,
		chromedp.Navigate(base+"/kafka/main/topics/orders.DLT?partition=all&limit=40"),
		chromedp.WaitVisible(`[data-testid="records-table"]`),
	)
	positions := must(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="record-position"]')].map(e => e.textContent.trim())`))
	times := must(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="record-age"] time')].map(e => e.getAttribute('datetime'))`))
	options := must(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="partition-select"] option')].map(o => o.textContent)`))
	screenshot(t, ctx, "kafka-dlt-all")
	if len(positions) != len(api.Records) {
		t.Fatalf("page shows %d records, the API %d", len(positions), len(api.Records))
	}
	for i, r := range api.Records {
		if want := strconv.Itoa(int(r.Partition)) + ":" + strconv.FormatInt(r.Offset, 10); positions[i] != want {
			t.Errorf("row %d is %s, the API's record %d is %s", i, positions[i], i, want)
			break
		}
	}
	if !sort.SliceIsSorted(times, func(i, j int) bool { return times[i] > times[j] }) {
		t.Errorf("rows are not newest first: %v", times)
	}
	if len(options) != len(api.Partitions)+1 || !strings.Contains(options[1], "records)") {
		t.Errorf("partition selector %q", options)
	}

	// The error group's Records link opens the group across every partition.
	act(t, ctx,
		chromedp.Navigate(base+"/kafka/main/topics/orders.DLT/errors"),
		chromedp.WaitVisible(`[data-testid="error-groups"]`),
		chromedp.Click(`[data-testid="group-records"]`),
		chromedp.WaitVisible(`[data-testid="exception-filter"]`),
	)
	loc := must(t, ctx, chromedp.Location())
	inGroup := must(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="record-position"]')].map(e => e.textContent.split(':')[0])`))
	groupParts := map[string]bool{}
	for _, p := range inGroup {
		groupParts[p] = true
	}
	if !strings.Contains(loc, "partition=all") || len(groupParts) < 2 {
		t.Errorf("Records link %s shows partitions %v", loc, groupParts)
	}
}

// The cluster and group pages carry the live stamp and no empty separators.
func TestBrowserKafkaLivePages(t *testing.T) {
	base := kafkaConsole(t)
	ctx, _ := newBrowser(t)
	act(t, ctx, chromedp.Navigate(base+"/kafka/main"), chromedp.WaitVisible(`[data-testid="live-stamp"]`))
	screenshot(t, ctx, "kafka-cluster")
	act(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="group-row"] a`)), chromedp.WaitVisible(`#group-stats`))
	sub := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="page-header"] .subtitle`)))
	screenshot(t, ctx, "kafka-group")
	if strings.Contains(sub, "·  ·") || strings.HasSuffix(strings.TrimSpace(sub), "·") {
		t.Errorf("group subtitle %q has an empty part", sub)
	}

	// The consumer's pipeline: the main topic beside its retry topic and DLT.
	act(t, ctx, chromedp.Navigate(base+"/kafka/main/groups/legacy-reporting"), chromedp.WaitVisible(`[data-testid="pipelines"]`))
	verdict := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="pipeline-verdict"]`)))
	stages := must(t, ctx, chromedp.Text(chromedp.CSS(`[data-testid="pipeline-table"] tbody`)))
	screenshot(t, ctx, "kafka-group-pipeline")
	if !strings.HasPrefix(verdict, "orders: the main topic's lag is") || !strings.Contains(stages, "orders.retry-1") || !strings.Contains(stages, "orders.DLT") {
		t.Errorf("pipeline: %q / %q", verdict, stages)
	}
}

// TestBrowserAvroRecord: a Confluent-framed Avro dead letter shows decoded, as JSON, with its
// schema named (format, id, subject, type) — not as a hex dump.
func TestBrowserAvroRecord(t *testing.T) {
	k := startKafka(t, nil)
	reg, err := demo.StartSchemaRegistry("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	ctx := waittest.Context(t, time.Minute)
	if err := demo.SeedSchemaTopics(ctx, k.Addrs(), reg.Registry); err != nil {
		t.Fatal(err)
	}
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
kafka: [{name: main, brokers: [%q], schema_registry: {url: %q}}]
`, pgtest.NewDatabase(t), k.Addrs()[0], reg.URL()))
	bctx, _ := newBrowser(t)
	// A row's full view loads when it is first expanded.
	act(t, bctx, chromedp.Navigate(base+"/kafka/main/topics/invoices.DLT?partition=0"),
		chromedp.WaitVisible(`tr[data-record-row]`), chromedp.Click(`tr[data-record-row]`),
		chromedp.WaitVisible(`tr[data-row-detail] [data-testid="value-schema"]`))
	first := `document.querySelector('tr[data-row-detail]')`
	schema := must(t, bctx, chromedp.Evaluate[string](first+`.querySelector('[data-testid="value-schema"]').textContent`))
	value := must(t, bctx, chromedp.Evaluate[string](first+`.querySelector('pre') ? `+first+`.textContent : ""`))
	screenshot(t, bctx, "kafka-avro-record")
	if !strings.Contains(schema, "avro") || !strings.Contains(schema, "invoices-value") || !strings.Contains(schema, "acme.billing.Invoice") {
		t.Errorf("the schema named: %q", schema)
	}
	if !strings.Contains(value, `"invoiceId"`) || !strings.Contains(value, `"INV-00`) || !strings.Contains(value, `"status"`) {
		t.Errorf("the decoded value: %.400q", value)
	}
}
