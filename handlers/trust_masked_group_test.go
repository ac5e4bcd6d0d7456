package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/views/layout"
)

// TestTrustMaskedErrorGroupResolve: with the exception type header masked, an error group's type
// shows masked, and resolving by a type is compared with what the operator sees — a right guess
// of the hidden type matches nothing, as a wrong one does, so resolving is no oracle of it. The
// group's own button on the errors page resolves exactly that group's records (two of
// SecretFraud's, not the third of another masked type), though it cannot name the type.
func TestTrustMaskedErrorGroupResolve(t *testing.T) {
	const secret, other = "com.acme.SecretFraudRuleException", "com.acme.SecretLimitException"
	rec := func(typ string) *kgo.Record {
		return &kgo.Record{Topic: "orders.DLT", Value: []byte(`{"orderId":"o-1"}`), Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")}, {Key: "kafka_dlt-exception-fqcn", Value: []byte(typ)}}}
	}
	k := dltClusterOf(t, 1, rec(secret), rec(other), rec(secret))
	red, err := redact.New([]string{"kafka_dlt-exception-fqcn"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := triage.New(storetest.Open(t), []triage.Cluster{k})
	h := NewKafka([]KafkaCluster{k}, nil, func(echo.Context, string, string) layout.Meta {
		return layout.Meta{CanOperate: true, CSRFToken: "csrf"}
	}, red, nil)
	h.SetTriage(tr)
	operator := access.Actor{Name: "otto", Role: access.Operator}
	names, values := []string{"cluster", "topic"}, []string{"main", "orders.DLT"}
	post := func(handler echo.HandlerFunc, contentType, body string) (*httptest.ResponseRecorder, error) {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set(echo.HeaderContentType, contentType)
		rr := httptest.NewRecorder()
		c := echo.New().NewContext(req, rr)
		c.SetParamNames(names...)
		c.SetParamValues(values...)
		c.Set(actorKey, operator)
		return rr, handler(c)
	}

	// A guess of the hidden type, right or wrong, matches nothing.
	for _, guess := range []string{secret, other, "com.acme.Wrong"} {
		rr, err := post(h.APIResolve, echo.MIMEApplicationJSON, `{"error_group":{"exception_type":"`+guess+`"},"state":"open"}`)
		if err != nil {
			t.Fatalf("resolve by %s: %v", guess, err)
		}
		var res struct{ Matched int64 }
		if err := json.Unmarshal(rr.Body.Bytes(), &res); err != nil || res.Matched != 0 {
			t.Errorf("resolving by the type %q matched %d (%s): a guess of a masked type must match nothing", guess, res.Matched, rr.Body)
		}
	}

	// The errors page: two rows, their types masked, each with its resolve button.
	rr, err := callAPI(t, h.ErrorsPage, "/", names, values...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rr.Body.String(), "Secret") {
		t.Fatalf("the errors page shows a masked type")
	}
	doc, err := goquery.NewDocumentFromReader(rr.Body)
	if err != nil {
		t.Fatal(err)
	}
	// Its Plan replay posted the masked name, which plans nothing, and its note was kept under
	// the mask's text: neither is offered for a masked group; the page says why.
	if n, m := doc.Find(`[data-testid="replay-error-group"], [data-testid="error-group"] [data-testid="note-form"]`).Length(),
		doc.Find(`[data-testid="masked-group-no-plan"]`).Length(); n != 0 || m != 2 {
		t.Errorf("masked groups offer %d plan or note forms (want 0) and say why on %d rows (want 2)", n, m)
	}
	type row struct {
		count string
		form  url.Values
	}
	var rows []row
	doc.Find(`tr[data-testid="error-group"]`).Each(func(_ int, s *goquery.Selection) {
		form := url.Values{}
		s.Find(`form[data-testid="resolve-error-group"] input[type="hidden"]`).Each(func(_ int, in *goquery.Selection) {
			form.Set(in.AttrOr("name", ""), in.AttrOr("value", ""))
		})
		rows = append(rows, row{count: strings.TrimSpace(s.Find("td.num").First().Text()), form: form})
	})
	if len(rows) != 2 {
		t.Fatalf("%d error groups, want 2", len(rows))
	}
	var two row
	for _, r := range rows {
		if !strings.HasPrefix(r.form.Get("exception_type"), redact.Redacted) {
			t.Errorf("a group's button posts the type %q, want it masked", r.form.Get("exception_type"))
		}
		if r.count == "2" {
			two = r
		}
	}
	if two.form == nil {
		t.Fatalf("no group of 2 records: %+v", rows)
	}

	// The button of the group of two, as pressed: its two records resolved, the third left open.
	form := two.form
	form.Set("reason", "fixed in 4.2.1")
	if _, err := post(h.FormResolve, echo.MIMEApplicationForm, form.Encode()); err != nil {
		t.Fatalf("the group's own button: %v", err)
	}
	recs := []kafkamodel.Record{{Partition: 0, Offset: 0}, {Partition: 0, Offset: 1}, {Partition: 0, Offset: 2}}
	marks, err := tr.Resolutions(t.Context(), "main", "orders.DLT", recs)
	if err != nil {
		t.Fatal(err)
	}
	for off, want := range []string{triage.StateResolved, "", triage.StateResolved} {
		if got := marks[triage.RecordKey{Partition: 0, Offset: int64(off)}].State; got != want {
			t.Errorf("record 0:%d is %q after its group's button, want %q", off, got, want)
		}
	}
}
