package handlers

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/storetest"
)

// An export records its intent before the first byte: with the audit log unwritable it is refused
// (503, nothing exported); otherwise the outcome row names the intent and counts what was written.
func TestExportIntentBeforeContent(t *testing.T) {
	ctx := context.Background()
	const secret = `{"secret":"s3cr3t"}`
	k := dltCluster(t, 1, secret, secret, secret)
	st := storetest.Open(t)
	export := func() *httptest.ResponseRecorder {
		h := NewSearch(SearchOptions{Kafka: []SearchCluster{k}, Audit: st, ExportMinRole: "viewer"})
		e := echo.New()
		e.HTTPErrorHandler = func(err error, c echo.Context) {
			code := http.StatusInternalServerError
			if errors.Is(err, ops.ErrUnavailable) {
				code = http.StatusServiceUnavailable // as web's one mapping does
			}
			_ = c.String(code, err.Error())
		}
		e.GET("/x/:cluster/:topic", h.ExportKafka, func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				SetActor(c, access.Actor{Name: "otto", Role: access.Operator})
				return next(c)
			}
		})
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x/main/orders.DLT", nil))
		return rec
	}
	if rec := export(); rec.Code != http.StatusOK || strings.Count(rec.Body.String(), "s3cr3t") != 3 {
		t.Fatalf("export: %d %s", rec.Code, rec.Body.String())
	}
	list, err := st.ListAudit(ctx, audit.Filter{Action: "content.export", Intents: true})
	if err != nil {
		t.Fatal(err)
	}
	var intent, outcome *audit.Entry
	for i := range list {
		switch e := &list[i]; e.Outcome {
		case audit.OutcomeStarted:
			intent = e
		case audit.OutcomeOK:
			outcome = e
		}
	}
	if intent == nil || outcome == nil || outcome.Count == nil || *outcome.Count != 3 || outcome.Detail["intent_id"] == nil {
		t.Fatalf("audit rows %+v", list)
	}

	st.Close() // the audit log cannot be written now
	rec := export()
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "s3cr3t") || !strings.Contains(rec.Body.String(), "nothing was exported") {
		t.Fatalf("with the audit log down: %d %s", rec.Code, rec.Body.String())
	}
}

// A CSV export does not hand a spreadsheet formulas: a dead letter whose key, value and exception
// type start with =, + and @ was exported raw, and the spreadsheet that opened it ran them. Such
// cells start with a single quote now (OWASP's CSV injection guidance); the NDJSON export, for
// programs, carries them unchanged.
func TestExportCSVNeutralisesFormulas(t *testing.T) {
	const key, value, fqcn, msg = `=HYPERLINK("http://evil","x")`, `+cmd|' /C calc'!A0`, `@SUM(1+1)`, "-2+3"
	k := dltClusterOf(t, 1, &kgo.Record{Topic: "orders.DLT", Key: []byte(key), Value: []byte(value),
		Headers: []kgo.RecordHeader{{Key: "kafka_dlt-exception-fqcn", Value: []byte(fqcn)}, {Key: "kafka_dlt-exception-message", Value: []byte(msg)},
			{Key: "kafka_dlt-original-topic", Value: []byte("\torders")}}})
	h := NewSearch(SearchOptions{Kafka: []SearchCluster{k}, ExportMinRole: "viewer"})
	export := func(format string) string { return viewerExport(t, h, format).Body.String() }

	rows, err := csv.NewReader(strings.NewReader(export("csv"))).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("csv: %v %q", err, rows)
	}
	got := map[string]string{}
	for i, name := range rows[0] {
		got[name] = rows[1][i]
	}
	for col, want := range map[string]string{"key": "'" + key, "value": "'" + value, "exception_type": "'" + fqcn,
		"exception_message": "'" + msg, "original_topic": "'\torders", "partition": "0", "offset": "0", "redacted": "false"} {
		if got[col] != want {
			t.Errorf("csv %s = %q, want %q", col, got[col], want)
		}
	}

	var j struct {
		Key, Value string
		DeadLetter struct {
			ExceptionType string `json:"exception_type"`
		} `json:"dead_letter"`
	}
	if err := json.Unmarshal([]byte(export("ndjson")), &j); err != nil {
		t.Fatal(err)
	}
	if j.Key != key || j.Value != value || j.DeadLetter.ExceptionType != fqcn {
		t.Errorf("ndjson changed the content: %+v", j)
	}
}

// A CSV export cut a value over 256 KiB (kafka.MaxValueBytes) without saying so, while the NDJSON
// export marked it value_truncated: the CSV has a value_truncated column, last so that the
// columns before it keep their places.
func TestExportCSVSaysAValueWasCut(t *testing.T) {
	k := dltCluster(t, 1, strings.Repeat("x", 300_000), "small")
	h := NewSearch(SearchOptions{Kafka: []SearchCluster{k}, ExportMinRole: "viewer"})
	rec := viewerExport(t, h, "csv")
	rows, err := csv.NewReader(strings.NewReader(rec.Body.String())).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv: %v, %d rows", err, len(rows))
	}
	if want := "partition,offset,timestamp,key,value,value_encoding,headers,original_topic,exception_type,exception_message,message_id,redacted,value_truncated"; strings.Join(rows[0], ",") != want {
		t.Errorf("header %q, want %s", rows[0], want)
	}
	for i, want := range []struct {
		length    int
		truncated string
	}{{kafka.MaxValueBytes, "true"}, {len("small"), "false"}} {
		row := rows[i+1]
		if len(row) != 13 {
			t.Fatalf("record %d: %d columns, want 13", i, len(row))
		}
		if len(row[4]) != want.length || row[12] != want.truncated {
			t.Errorf("record %d: a value of %d bytes, value_truncated %q; want %d and %s", i, len(row[4]), row[12], want.length, want.truncated)
		}
	}
}

// viewerExport is h's export of main's orders.DLT as format, asked by a viewer; anything but a
// 200 fails t.
func viewerExport(t *testing.T, h *Search, format string) *httptest.ResponseRecorder {
	t.Helper()
	asViewer := func(c echo.Context) error {
		SetActor(c, access.Actor{Name: "vera", Role: access.Viewer})
		return h.ExportKafka(c)
	}
	rec, err := callAPI(t, asViewer, "/?format="+format, []string{"cluster", "topic"}, "main", "orders.DLT")
	if err != nil || rec.Code != http.StatusOK {
		t.Fatalf("%s export: %d %v %s", format, rec.Code, err, rec.Body.String())
	}
	return rec
}

// A CSV export carried raw ESC, BEL and NUL bytes and bidi controls from message content: catting
// it recoloured the terminal, and a spreadsheet showed a right-to-left override's cell reversed.
// They are written out as text now (\x1b, \u202e); the NDJSON export, for programs, is JSON, which
// escapes controls itself and keeps the text as it was.
func TestExportCSVWritesControlsAsText(t *testing.T) {
	const key, value = "k\x1b[31mred\x07\x00", "{\"n\":\"\u202egpj.exe\"}"
	k := dltClusterOf(t, 1, &kgo.Record{Topic: "orders.DLT", Key: []byte(key), Value: []byte(value),
		Headers: []kgo.RecordHeader{{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.\u2066Evil\u2069Exception")}}})
	h := NewSearch(SearchOptions{Kafka: []SearchCluster{k}, ExportMinRole: "viewer"})
	body := viewerExport(t, h, "csv").Body.String()
	for _, raw := range []string{"\x1b", "\x07", "\x00", "\u202e", "\u2066", "\u2069"} {
		if strings.Contains(body, raw) {
			t.Errorf("the CSV carries %q raw", raw)
		}
	}
	for _, text := range []string{`k\x1b[31mred\x07\x00`, `\u202egpj.exe`, `com.acme.\u2066Evil\u2069Exception`} {
		if !strings.Contains(body, text) {
			t.Errorf("the CSV does not write %s as text: %q", text, body)
		}
	}
	var j struct{ Key, Value string }
	if err := json.Unmarshal(viewerExport(t, h, "ndjson").Body.Bytes(), &j); err != nil || j.Key != key || j.Value != value {
		t.Errorf("ndjson changed the content: %+v %v", j, err)
	}
}

// The download's name came from the queue or topic name, which whoever creates a queue chooses:
// a quote or a semicolon in it shaped the Content-Disposition header. It is built from a safe
// alphabet now.
func TestExportFileName(t *testing.T) {
	for in, want := range map[string]string{
		"orders.DLT":             "orders.DLT",
		`evil"; filename=x.exe`:  "evil___filename_x.exe",
		"../../etc/passwd":       "etc_passwd",
		"invoice\u202egpj.exe":   "invoice_gpj.exe",
		"\r\nSet-Cookie: a=b":    "Set-Cookie__a_b",
		"":                       "export",
		"...":                    "export",
		strings.Repeat("q", 300): strings.Repeat("q", 100),
		"commandes.dlq-é":        "commandes.dlq-",
	} {
		if got := exportFileName(in); got != want {
			t.Errorf("exportFileName(%q) = %q, want %q", in, got, want)
		}
	}
}
