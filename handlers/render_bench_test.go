package handlers

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/views/components"
	kafkapages "github.com/redrive/redrive/views/pages/kafka"
)

// Reproduce:
//
//	go test ./handlers/ -run '^$' -bench RenderPage -benchtime 200x -cpu 1,8
//
// A dead-letter topic's page as twenty people open it at once: 50 Spring DLT records with their
// 10 KB stack traces, rendered by render (its buffers kept between requests) and by the naive way,
// a fresh bytes.Buffer grown for every request, in the same run. -cpu 8 renders 8 pages at a time
// (b.RunParallel). (The page was about 600 KB of HTML while every record's view was inline; its
// rows alone are about 90 KB: BenchmarkDLTPageOf500.)
func BenchmarkRenderPage(b *testing.B) {
	page := kafkapages.Topic(benchTopicPage())
	fresh := func(c echo.Context, status int, page templ.Component) error {
		var buf bytes.Buffer
		if err := page.Render(c.Request().Context(), &buf); err != nil {
			return err
		}
		return c.HTMLBlob(status, components.VisibleHTML(buf.Bytes()))
	}
	for _, side := range []struct {
		name   string
		render func(echo.Context, int, templ.Component) error
	}{{"pooled", render}, {"fresh", fresh}} {
		b.Run(side.name, func(b *testing.B) {
			e := echo.New()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					rec := httptest.NewRecorder()
					c := e.NewContext(httptest.NewRequest(http.MethodGet, "/kafka/main/topics/orders.DLT", nil), rec)
					if err := side.render(c, http.StatusOK, page); err != nil || rec.Body.Len() < 50_000 {
						b.Fatalf("%v (%d bytes)", err, rec.Body.Len())
					}
				}
			})
		})
	}
}

// benchTopicPage is orders.DLT's first page: 50 records as the demo's Spring consumer writes
// them, each with a stack trace of 10 KB.
func benchTopicPage() kafkapages.TopicPage {
	trace := strings.Repeat("\tat com.acme.orders.OrderListener.onMessage(OrderListener.java:42)\n", 150)
	page := kafkapages.TopicPage{Cluster: "main", Topic: "orders.DLT", All: true, Order: "newest", Limit: 50,
		DeadLetters: true, State: "open", Read: 50}
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for i := range 50 {
		off := int64(1000 + i)
		r := kafkamodel.Record{Partition: int32(i % 4), Offset: off, Timestamp: at.Add(-time.Duration(i) * time.Second),
			Key:   fmt.Appendf(nil, "order-%d", i),
			Value: fmt.Appendf(nil, `{"orderId":%d,"status":"FAILED","amount":"%d.99"}`, i, i),
			DeadLetter: &kafkamodel.DeadLetter{OriginalTopic: "orders", OriginalOffset: &off, ConsumerGroup: "orders-service",
				ExceptionType:    "org.springframework.kafka.listener.ListenerExecutionFailedException",
				ExceptionCause:   "com.acme.orders.PaymentDeclinedException",
				ExceptionMessage: fmt.Sprintf("payment declined for order-%d", i), Stacktrace: trace,
				MessageID: fmt.Sprintf("msg-%d", i), Convention: "spring-dlt"}}
		r.Size = len(r.Key) + len(r.Value)
		page.Records = append(page.Records, toRecordView(r))
	}
	return page
}

// Reproduce:
//
//	go test ./handlers/ -run '^$' -bench DLTPageOf500 -benchtime 5x -count 3
//
// The page of 500 dead letters (limit=500, what an error group's records link reads), each with
// a 100 KB stack trace (a StackOverflowError's, in its header and decoded) and a 48 KB value:
// its rows, whose views load when expanded, against every view inline as the page had them (the
// rows and the 500 views, rendered in the same run).
func BenchmarkDLTPageOf500(b *testing.B) {
	trace := strings.Repeat("\tat com.acme.orders.OrderListener.onMessage(OrderListener.java:42)\n", 1500)
	value := `{"items":[` + strings.Repeat(`{"sku":"SKU-1","qty":2,"price":"12.50","note":"xxxxxxxxxxxxxxxxxxxx"},`, 700) + `{}]}`
	page := kafkapages.TopicPage{Cluster: "main", Topic: "orders.DLT", All: true, Order: "newest", Limit: 500,
		DeadLetters: true, State: "open", Read: 500}
	page.Meta.CanOperate = true
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for i := range 500 {
		off := int64(1000 + i)
		r := kafkamodel.Record{Partition: int32(i % 4), Offset: off, Timestamp: at.Add(-time.Duration(i) * time.Second),
			Key: fmt.Appendf(nil, "order-%d", i), Value: []byte(value),
			Headers: []kafkamodel.Header{{Key: "kafka_dlt-exception-stacktrace", Value: []byte(trace)}},
			DeadLetter: &kafkamodel.DeadLetter{OriginalTopic: "orders", OriginalOffset: &off, ExceptionType: "java.lang.StackOverflowError",
				Stacktrace: trace, Convention: "spring-dlt"}}
		r.Size = len(r.Key) + len(r.Value)
		page.Records = append(page.Records, toRecordView(r))
	}
	for _, side := range []struct {
		name   string
		inline bool
	}{{"rows", false}, {"inline", true}} {
		b.Run(side.name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := kafkapages.Topic(page).Render(b.Context(), &buf); err != nil {
					b.Fatal(err)
				}
				if side.inline {
					for _, r := range page.Records {
						if err := kafkapages.RecordDetail(page, r).Render(b.Context(), &buf); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportMetric(float64(buf.Len())/1e6, "MB/page")
		})
	}
}
