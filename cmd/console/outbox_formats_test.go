package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/pgtest"
)

// TestOutboxFormatsInAPIAndPage: a Spring Modulith registry in MariaDB (Spring Modulith's MySQL
// DDL, upper-case), a namastack outbox_record and a Debezium outbox table in PostgreSQL beside the
// seed's outbox: the API
// names each outbox's format and keys its counts by that format's own states (cross-checked with
// the mariadb CLI), a serialized event is masked by the redaction rules, the overview raises the FAILED publications naming the application-side call,
// a repair of a registry is refused with a 409, /metrics carries each format's own states, and the page shows the registry's states, groups
// and records — a hostile serialized event as text — and says the console writes nothing.
func TestOutboxFormatsInAPIAndPage(t *testing.T) {
	storeDSN, seedDSN := pgtest.NewDatabase(t), seededOutbox(t)
	modulith := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, modulith, `CREATE TABLE EVENT_PUBLICATION (ID VARCHAR(36) NOT NULL, LISTENER_ID VARCHAR(512) NOT NULL,
		EVENT_TYPE VARCHAR(512) NOT NULL, SERIALIZED_EVENT VARCHAR(4000) NOT NULL, PUBLICATION_DATE TIMESTAMP(6) NOT NULL,
		COMPLETION_DATE TIMESTAMP(6) DEFAULT NULL NULL, STATUS VARCHAR(20), COMPLETION_ATTEMPTS INT,
		LAST_RESUBMISSION_DATE TIMESTAMP(6) DEFAULT NULL NULL, PRIMARY KEY (ID), INDEX EVENT_PUBLICATION_BY_COMPLETION_DATE_IDX (COMPLETION_DATE))`)
	pub := func(id, status, listener, event string, ageMin int, done bool) {
		t.Helper()
		completion := "NULL"
		if done {
			completion = "UTC_TIMESTAMP(6)"
		}
		mysqltest.Exec(t, modulith, `INSERT INTO EVENT_PUBLICATION VALUES (?, ?, 'com.acme.order.OrderPlaced', ?,
			UTC_TIMESTAMP(6) - INTERVAL ? MINUTE, `+completion+`, ?, 2, NULL)`, id, listener, event, ageMin, status)
	}
	const billing = "com.acme.billing.Invoicing.on(com.acme.order.OrderPlaced)"
	pub("00000000-0000-4000-8000-000000000001", "FAILED", billing, hostile, 30, false)
	pub("00000000-0000-4000-8000-000000000002", "FAILED", billing, `{"orderId":"o-2","card":{"number":"4111111111111111"}}`, 20, false)
	pub("00000000-0000-4000-8000-000000000003", "PUBLISHED", "com.acme.mail.Mailer.on(com.acme.order.OrderPlaced)", `{"orderId":"o-3"}`, 1, false)
	pub("00000000-0000-4000-8000-000000000004", "COMPLETED", billing, `{"orderId":"o-4"}`, 60, true)
	namastack := pgtest.NewDatabase(t)
	pgtest.Exec(t, namastack, `CREATE TABLE outbox_record (id VARCHAR(255) PRIMARY KEY, status VARCHAR(20) NOT NULL,
		record_key VARCHAR(255) NOT NULL, record_type VARCHAR(255) NOT NULL, payload TEXT NOT NULL, context TEXT,
		created_at TIMESTAMP NOT NULL, completed_at TIMESTAMP, failure_count INT NOT NULL, failure_reason VARCHAR(1000),
		next_retry_at TIMESTAMP NOT NULL, partition_no INT NOT NULL, handler_id VARCHAR(1000) NOT NULL);
		INSERT INTO outbox_record VALUES ('r-1', 'NEW', 'order-1', 'OrderPlaced', '{}', NULL, now() AT TIME ZONE 'UTC', NULL, 0, NULL,
			now() AT TIME ZONE 'UTC', 0, 'mailer'), ('r-2', 'FAILED', 'order-2', 'OrderPlaced', '{}', NULL, now() AT TIME ZONE 'UTC', NULL, 5,
			'SMTP 550', now() AT TIME ZONE 'UTC', 0, 'mailer')`)
	pgtest.Exec(t, namastack, `CREATE TABLE outbox (id UUID PRIMARY KEY, aggregatetype VARCHAR(255) NOT NULL,
		aggregateid VARCHAR(255) NOT NULL, type VARCHAR(255) NOT NULL, payload JSONB, created_at TIMESTAMPTZ NOT NULL DEFAULT now());
		INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, created_at) VALUES
			(gen_random_uuid(), 'Shipment', 's-1', 'ShipmentCreated', '{}', now() - interval '2 hours'),
			(gen_random_uuid(), 'Shipment', 's-2', 'ShipmentCreated', '{}', now())`)
	base := startConsole(t, fmt.Sprintf(`auth: {mode: none}
store: {dsn: %q}
redaction: {json_paths: ["$.card.number"]}
outboxes:
  - {name: orders, dsn: %q}
  - {name: modulith, dsn: %q, format: spring-modulith}
  - {name: records, dsn: %q, format: namastack}
  - {name: cdc, dsn: %q, format: debezium, columns: {created_at: created_at}}
`, storeDSN, seedDSN, modulith, namastack, namastack))

	var list struct {
		Outboxes []struct {
			Name, Format string
			Counts       map[string]int64
			Error        string
			Registry     *struct {
				Attention int64
				ReadOnly  string `json:"read_only"`
				Groups    []struct{ State, Key string }
			}
		}
	}
	r := do(t, nil, "GET", base+"/api/v1/outboxes", "", "")
	if err := json.Unmarshal([]byte(r.body), &list); err != nil || r.status != 200 || len(list.Outboxes) != 4 {
		t.Fatalf("GET /api/v1/outboxes: %d %s (%v)", r.status, r.body, err)
	}
	keys := func(m map[string]int64) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	seed, mod, nam, cdc := list.Outboxes[0], list.Outboxes[1], list.Outboxes[2], list.Outboxes[3]
	if cdc.Format != "debezium" || cdc.Counts == nil || len(cdc.Counts) != 0 || cdc.Registry == nil || cdc.Registry.Attention != 0 ||
		!strings.Contains(cdc.Registry.ReadOnly, "connector") {
		t.Errorf("debezium outbox: %+v %+v", cdc, cdc.Registry)
	}
	if seed.Format != "seed" || !slices.Equal(keys(seed.Counts), []string{"DEAD", "FAILED", "PROCESSING", "READY", "SENT"}) || seed.Registry != nil {
		t.Errorf("seed outbox: %+v", seed)
	}
	if mod.Format != "spring-modulith" || mod.Error != "" ||
		!slices.Equal(keys(mod.Counts), []string{"COMPLETED", "FAILED", "PROCESSING", "PUBLISHED", "RESUBMITTED", "STALE", "STRANDED"}) ||
		mod.Counts["FAILED"] != 2 || mod.Counts["PUBLISHED"] != 1 || mod.Counts["COMPLETED"] != 1 || mod.Registry == nil ||
		mod.Registry.Attention != 2 || !strings.Contains(mod.Registry.ReadOnly, "FailedEventPublications.resubmit") {
		t.Errorf("spring-modulith outbox: %+v %+v", mod, mod.Registry)
	}
	if nam.Format != "namastack" || !slices.Equal(keys(nam.Counts), []string{"COMPLETED", "FAILED", "NEW"}) || nam.Counts["FAILED"] != 1 || nam.Counts["NEW"] != 1 {
		t.Errorf("namastack outbox: %+v", nam)
	}
	// The counts as an independent client reads them.
	u, _ := url.Parse(modulith)
	pw, _ := u.User.Password()
	out, err := exec.Command("mariadb", "-N", "-B", "-h", u.Hostname(), "-P", u.Port(), "-u", u.User.Username(), "-p"+pw,
		strings.TrimPrefix(u.Path, "/"), "-e", "SELECT COUNT(*) FROM EVENT_PUBLICATION WHERE STATUS = 'FAILED' AND COMPLETION_DATE IS NULL").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != fmt.Sprint(mod.Counts["FAILED"]) {
		t.Errorf("mariadb CLI counts %q (%v), the API %d", out, err, mod.Counts["FAILED"])
	}

	one := do(t, nil, "GET", base+"/api/v1/outboxes/modulith", "", "")
	if one.status != 200 || !strings.Contains(one.body, `"format":"spring-modulith"`) || !strings.Contains(one.body, `"FAILED":2`) {
		t.Errorf("GET /api/v1/outboxes/modulith: %d %s", one.status, one.body)
	}
	recs := do(t, nil, "GET", base+"/api/v1/outboxes/modulith/events?status=failed&limit=1", "", "")
	if recs.status != 200 || !strings.Contains(recs.body, `"id":"00000000-0000-4000-8000-000000000002"`) || !strings.Contains(recs.body, `"next_cursor":"`) {
		t.Errorf("records: %d %s", recs.status, recs.body)
	}
	if bad := do(t, nil, "GET", base+"/api/v1/outboxes/modulith/events?status=DEAD", "", ""); bad.status != 400 ||
		!strings.Contains(bad.body, "PUBLISHED, PROCESSING, RESUBMITTED, FAILED, STRANDED, STALE, COMPLETED") {
		t.Errorf("a seed state on a registry: %d %s", bad.status, bad.body)
	}
	if nf := do(t, nil, "GET", base+"/api/v1/outboxes/modulith/events/"+strings.Repeat("x", 300), "", ""); nf.status != 404 || len(nf.body) > 400 {
		t.Errorf("an unknown record: %d %s", nf.status, nf.body)
	}
	// The serialized event is masked like any payload.
	masked := do(t, nil, "GET", base+"/api/v1/outboxes/modulith/events/00000000-0000-4000-8000-000000000002", "", "")
	if masked.status != 200 || strings.Contains(masked.body, "4111111111111111") || !strings.Contains(masked.body, `"payload_redacted":true`) ||
		!strings.Contains(masked.body, `"state":"FAILED"`) {
		t.Errorf("a record's serialized event: %d %s", masked.status, masked.body)
	}
	rq := do(t, nil, "POST", base+"/api/v1/outboxes/modulith/events/requeue", "application/json", `{"ids":[1],"reason":"retry"}`)
	if rq.status != 409 || !strings.Contains(rq.body, "FailedEventPublications.resubmit") {
		t.Errorf("requeue on a registry: %d %s", rq.status, rq.body)
	}
	ov := do(t, nil, "GET", base+"/api/v1/overview", "", "")
	if !strings.Contains(ov.body, "Outbox modulith: 2 FAILED row(s) in its Spring Modulith event publication registry") ||
		!strings.Contains(ov.body, "Outbox records: 1 FAILED row(s)") {
		t.Errorf("overview without the registries' FAILED rows: %s", ov.body)
	}

	// Every registry answer matches web/openapi.yaml (whose schemas forbid unknown fields).
	doc := loadOpenAPI(t, base)
	for _, c := range []struct{ template, path string }{
		{"/api/v1/outboxes", "/api/v1/outboxes"},
		{"/api/v1/outboxes/{name}", "/api/v1/outboxes/modulith"},
		{"/api/v1/outboxes/{name}", "/api/v1/outboxes/cdc"},
		{"/api/v1/outboxes/{name}/events", "/api/v1/outboxes/records/events"},
		{"/api/v1/outboxes/{name}/events", "/api/v1/outboxes/modulith/events?status=FAILED&limit=1"},
		{"/api/v1/outboxes/{name}/events/{id}", "/api/v1/outboxes/modulith/events/00000000-0000-4000-8000-000000000002"},
		{"/api/v1/outboxes/{name}/events/{id}", "/api/v1/outboxes/records/events/r-2"},
	} {
		r := do(t, nil, "GET", base+c.path, "", "")
		var v any
		if err := json.Unmarshal([]byte(r.body), &v); err != nil || r.status != 200 {
			t.Errorf("GET %s: %d %.300s", c.path, r.status, r.body)
			continue
		}
		schema := doc.Paths.Find(c.template).Get.Responses.Status(200).Value.Content.Get("application/json").Schema.Value
		if err := schema.VisitJSON(v); err != nil {
			t.Errorf("GET %s does not match web/openapi.yaml: %v\n%.1000s", c.path, err, r.body)
		}
	}

	// The exporter's outbox series carry each format's own states.
	m := scrape(t, base)
	if v, ok := m[series("redrive_outbox_events", "outbox", "modulith", "status", "FAILED")]; !ok || v != 2 {
		t.Errorf("redrive_outbox_events{modulith,FAILED} = %v (%v), want 2", v, ok)
	}
	if _, ok := m[series("redrive_outbox_events", "outbox", "modulith", "status", "READY")]; ok {
		t.Error("a seed state exported for the spring-modulith outbox")
	}
	if v := m[series("redrive_outbox_events", "outbox", "orders", "status", "READY")]; v == 0 {
		t.Error("the seed outbox's READY series is gone")
	}

	ctx, dialogs := newBrowser(t)
	act(t, ctx, chromedp.Navigate(base+"/outboxes/modulith"), chromedp.WaitVisible(`[data-testid="records-table"]`))
	failed := must(t, ctx, chromedp.Text(`[data-testid="count-FAILED"] [data-testid="stat-value"]`))
	readOnly := must(t, ctx, chromedp.Text(`[data-testid="read-only"]`))
	groups := countOf(t, ctx, `[data-testid="registry-group"]`)
	rows := countOf(t, ctx, `[data-testid="record-row"]`)
	screenshot(t, ctx, "outbox-modulith")
	if failed != "2" || !strings.Contains(readOnly, "FailedEventPublications.resubmit") || groups != 2 || rows != 4 {
		t.Errorf("modulith page: FAILED %q, read-only %q, %d groups, %d rows", failed, readOnly, groups, rows)
	}
	act(t, ctx, chromedp.Navigate(base+"/outboxes/modulith/events/00000000-0000-4000-8000-000000000001?reveal=true"), chromedp.WaitVisible(`[data-testid="payload"]`))
	payload := must(t, ctx, chromedp.Text(`[data-testid="payload"]`))
	pwned := must(t, ctx, chromedp.Evaluate[bool](`window.__pwned !== undefined`))
	if !strings.Contains(payload, "<script>") || pwned || dialogs.Load() != 0 {
		t.Errorf("hostile serialized event: %q, pwned %v, dialogs %d", payload, pwned, dialogs.Load())
	}
	act(t, ctx, chromedp.Navigate(base+"/outboxes/cdc"), chromedp.WaitVisible(`[data-testid="records-table"]`))
	cdcRows := must(t, ctx, chromedp.Text(`[data-testid="count-rows"] [data-testid="stat-value"]`))
	cdcNote := must(t, ctx, chromedp.Text(`[data-testid="read-only"]`))
	if cdcRows != "2" || !strings.Contains(cdcNote, "connector's offsets") || countOf(t, ctx, `[data-testid^="count-"]`) != 1 {
		t.Errorf("debezium page: rows %q, note %q", cdcRows, cdcNote)
	}
	screenshot(t, ctx, "outbox-debezium")
	act(t, ctx, chromedp.Navigate(base+"/outboxes"), chromedp.WaitVisible(`[data-testid="registry-stats"]`))
	if n := countOf(t, ctx, `[data-testid="registry-stats"]`); n != 3 {
		t.Errorf("%d registry panels on the outboxes page, want 3", n)
	}
	screenshot(t, ctx, "outboxes-formats")
}
