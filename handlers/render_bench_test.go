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
// 10 KB stack traces (about 600 KB of HTML), rendered by render (its buffers kept between
// requests) and by the naive way, a fresh bytes.Buffer grown for every request, in the same run.
// -cpu 8 renders 8 pages at a time (b.RunParallel).
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
					if err := side.render(c, http.StatusOK, page); err != nil || rec.Body.Len() < 500_000 {
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
