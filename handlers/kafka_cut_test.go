package handlers

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/views/layout"
)

// Only a record's value was cut for display: a dead letter whose exception message header was
// 900 KB showed it whole in its row, twice (the cell and its tooltip), in its error group's row,
// and in its view twice more (the decoded message and the headers table); a long key and stack
// trace too. Each is cut as the value is, the view says what was cut and its full size, and
// links the records API, which gives the record whole.
func TestRecordKeyHeadersAndExceptionAreCutForDisplay(t *testing.T) {
	const msgSize, keySize, traceSize = 900_000, 9_000, 70_000
	message := "<b>order 7</b> " + strings.Repeat("E", msgSize-len("<b>order 7</b> "))
	broker := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders.DLT"))
	prod := kfaketest.Client(t, broker, kgo.ProducerBatchMaxBytes(4<<20))
	for _, r := range []*kgo.Record{
		{Topic: "orders.DLT", Key: []byte(strings.Repeat("K", keySize)), Value: []byte(`{"order":7}`), Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.OrderRejected")},
			{Key: "kafka_dlt-exception-message", Value: []byte(message)},
			{Key: "kafka_dlt-exception-stacktrace", Value: []byte(strings.Repeat("S", traceSize))}}},
		{Topic: "orders.DLT", Key: []byte("small"), Value: []byte(`{}`)},
	} {
		if err := prod.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	k, err := kafka.New(configs.KafkaCluster{Name: "main", Brokers: broker.ListenAddrs()}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	h := NewKafka([]KafkaCluster{k}, sampledOnce{}, func(echo.Context, string, string) layout.Meta { return layout.Meta{} }, nil, nil)
	longest := func(body, of string) int {
		n := 0
		for _, run := range regexp.MustCompile(of+"+").FindAllString(body, -1) {
			n = max(n, len(run))
		}
		return n
	}
	names := []string{"cluster", "topic"}

	// The list: rows only, each a line of the key and the exception message.
	list, err := callAPI(t, h.TopicPage, "/?partition=0&state=all", names, "main", "orders.DLT")
	if err != nil {
		t.Fatal(err)
	}
	body := list.Body.String()
	if n := strings.Count(body, `data-testid="record-row"`); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
	if e, k := longest(body, "E"), longest(body, "K"); e > maxRowText || k > maxRowText || len(body) > 100_000 {
		t.Errorf("the list is %d bytes, the longest run of the message %d and of the key %d: want rows of at most %d each",
			len(body), e, k, maxRowText)
	}
	if !strings.Contains(body, "&lt;b&gt;order 7&lt;/b&gt;") || strings.Contains(body, "<b>order 7") {
		t.Error("the row's exception message is not escaped")
	}

	// The error groups: a paragraph of the sample's message.
	errs, err := callAPI(t, h.ErrorsPage, "/errors", names, "main", "orders.DLT")
	if err != nil {
		t.Fatal(err)
	}
	if n := longest(errs.Body.String(), "E"); n > maxSampleMessage {
		t.Errorf("the error groups show %d bytes of the sample's message, want at most %d", n, maxSampleMessage)
	}

	// The record's view: each part cut at its cap, saying so with its full size.
	req := httptest.NewRequest(http.MethodGet, "/?state=all", nil)
	req.Header.Set("HX-Request", "true")
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(req, rec)
	c.SetParamNames("cluster", "topic", "partition", "offset")
	c.SetParamValues("main", "orders.DLT", "0", "0")
	if err := h.RecordDetail(c); err != nil {
		t.Fatal(err)
	}
	body = rec.Body.String()
	for of, limit := range map[string]int{"E": maxRenderedField, "K": maxRenderedField, "S": maxRenderedValue} {
		if n := longest(body, of); n > limit {
			t.Errorf("the view shows %d bytes of a run of %s, want at most %d", n, of, limit)
		}
	}
	if len(body) > 2*maxRenderedValue {
		t.Errorf("the record's view is %d bytes", len(body))
	}
	for _, want := range []string{"Message cut for display: 900,000 bytes in full.", "Key cut for display: 9,000 bytes in full.",
		"Stack trace cut for display: 70,000 bytes in full.", "Header cut for display: 900,000 bytes in full.",
		"Header cut for display: 70,000 bytes in full."} {
		if !strings.Contains(body, want) {
			t.Errorf("the view does not say %q", want)
		}
	}
	if !strings.Contains(body, "&lt;b&gt;order 7&lt;/b&gt;") || strings.Contains(body, "<b>order 7") {
		t.Error("the view's exception message is not escaped")
	}

	// Its raw link is the records API's answer of that record, whole.
	raw := regexp.MustCompile(`data-testid="cut-note">[^<]*<a href="([^"]*)" data-testid="raw-record"`).FindStringSubmatch(body)
	if raw == nil {
		t.Fatal("no link to the raw record beside what was cut")
	}
	u, err := url.Parse(html.UnescapeString(raw[1]))
	if err != nil || u.Path != "/api/v1/kafka/main/topics/orders.DLT/records" {
		t.Fatalf("raw link %s (%v)", raw[1], err)
	}
	api, err := callAPI(t, h.APIRecords, "/?"+u.RawQuery, names, "main", "orders.DLT")
	if err != nil {
		t.Fatal(err)
	}
	var got recordsJSON
	if err := json.Unmarshal(api.Body.Bytes(), &got); err != nil || len(got.Records) != 1 {
		t.Fatalf("records API: %v, %d records", err, len(got.Records))
	}
	r := got.Records[0]
	if r.Offset != 0 || r.Key == nil || len(*r.Key) != keySize || r.DeadLetter == nil || r.DeadLetter.ExceptionMessage != message {
		t.Errorf("the raw record is not the record whole: offset %d, key %d bytes", r.Offset, len(*r.Key))
	}
}
