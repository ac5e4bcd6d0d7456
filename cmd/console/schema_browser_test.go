package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

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
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/kafka/main/topics/invoices.DLT?partition=0"),
		chromedp.WaitReady(`[data-testid="value-schema"]`)); err != nil {
		t.Fatal(err)
	}
	first := `document.querySelector('tr[data-row-detail]')`
	schema := must(t, bctx, chromedp.Evaluate[string](first+`.querySelector('[data-testid="value-schema"]').textContent`))
	value := must(t, bctx, chromedp.Evaluate[string](first+`.querySelector('pre') ? `+first+`.textContent : ""`))
	if err := chromedp.Do(bctx, chromedp.Click(`tr[data-record-row]`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, bctx, "kafka-avro-record")
	if !strings.Contains(schema, "avro") || !strings.Contains(schema, "invoices-value") || !strings.Contains(schema, "acme.billing.Invoice") {
		t.Errorf("the schema named: %q", schema)
	}
	if !strings.Contains(value, `"invoiceId"`) || !strings.Contains(value, `"INV-00`) || !strings.Contains(value, `"status"`) {
		t.Errorf("the decoded value: %.400q", value)
	}
}
