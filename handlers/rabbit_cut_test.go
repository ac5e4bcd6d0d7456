package handlers

import (
	"context"
	"encoding/json"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
)

// inflated is a broker whose browse answers its queue's messages with their x-exception-message
// and x-exception-stacktrace headers (and the dead-letter story decoded from them) made n bytes
// long: what a broker and client that negotiated a frame_max above RabbitMQ's default 128 KiB
// would deliver. The pages must not depend on that limit to stay small.
type inflated struct {
	RabbitBroker
	n int
}

func (b inflated) Browse(ctx context.Context, vhost, queue string, limit int) (rabbitmodel.BrowseResult, error) {
	res, err := b.RabbitBroker.Browse(ctx, vhost, queue, limit)
	for i, m := range res.Messages {
		if m.DeadLetter == nil {
			continue
		}
		d := *m.DeadLetter
		m.Headers = append([]rabbitmodel.Header(nil), m.Headers...)
		for j, h := range m.Headers {
			switch h.Key {
			case rabbitmodel.HeaderExceptionMessage:
				d.ExceptionMessage = bigText(h.Value, b.n)
				m.Headers[j].Value = d.ExceptionMessage
			case rabbitmodel.HeaderExceptionStacktrace:
				d.Stacktrace = bigText(h.Value, b.n)
				m.Headers[j].Value = d.Stacktrace
			}
		}
		m.DeadLetter = &d
		res.Messages[i] = m
	}
	return res, err
}

// bigText is s made n bytes long by repeating its last byte.
func bigText(s string, n int) string { return s + strings.Repeat(s[len(s)-1:], n-len(s)) }

// Only a message's body was cut for display: a dead letter's x-exception-message and
// x-exception-stacktrace headers showed whole on the queue's messages page — the exception
// message in its row twice (the cell and its tooltip), again in the message's dead-letter story
// and in its headers table, the stack trace twice. Each is cut as a Kafka record's are
// (toMessageView), the view says what was cut and its full size, and links the messages API,
// which gives the message whole.
func TestRabbitHeadersAndExceptionAreCutForDisplay(t *testing.T) {
	// RabbitMQ carries a message's headers in one frame, at most frame_max (128 KiB by default,
	// and amqp091 clients read no more): the broker's part is as large as that lets the console read.
	const brokerMessage, brokerTrace = 50_000, 70_000
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	rabbittest.Topology{TB: t, Ch: ch}.Orders("orders", "order.created")
	message := bigText("<b>order 7</b> rejected: E", brokerMessage)
	for _, p := range []amqp.Publishing{
		{MessageId: "m-big", Body: []byte(`{"order":7}`), Headers: amqp.Table{
			rabbitmodel.HeaderExceptionMessage:    message,
			rabbitmodel.HeaderExceptionStacktrace: bigText("com.acme.OrderRejected\n\tat com.acme.Orders.take(Orders.java:7)\nS", brokerTrace)}},
		{MessageId: "m-small", Body: []byte(`{}`)},
	} {
		if err := ch.Publish("orders", "order.created", false, false, p); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // the consumer rejects both: dead-lettered into orders.dlq
		d, ok, err := ch.Get("orders", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		if err := d.Nack(false, false); err != nil {
			t.Fatal(err)
		}
	}
	rabbittest.WaitDepth(t, ch, "orders.dlq", 2, 10*time.Second)
	br, err := rabbit.New(rabbittest.Config(t, vhost), configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	names := []string{"broker", "vhost", "queue"}
	longest := func(body, of string) int {
		n := 0
		for _, run := range regexp.MustCompile(of+"+").FindAllString(body, -1) {
			n = max(n, len(run))
		}
		return n
	}

	for _, tc := range []struct {
		name                 string
		broker               RabbitBroker
		messageSize, traceSz int
	}{
		{"as the broker delivers", br, brokerMessage, brokerTrace},
		{"900 KB headers", inflated{br, 900_000}, 900_000, 900_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewRabbit([]RabbitBroker{tc.broker}, freshQueues{br}, func(echo.Context, string, string) layout.Meta { return layout.Meta{} }, nil)
			rec, err := callAPI(t, h.MessagesPage, "/?limit=10", names, "test", vhost, "orders.dlq")
			if err != nil {
				t.Fatal(err)
			}
			body := rec.Body.String()
			t.Logf("messages page: %d bytes", len(body))
			if n := strings.Count(body, `data-testid="message-row"`); n != 2 {
				t.Fatalf("%d rows, want 2", n)
			}
			// The row: a line of the exception message, in the cell and its tooltip.
			cells := regexp.MustCompile(`(?s)title="([^"]*)" data-testid="row-exception">(.*?)</div>`).FindAllStringSubmatch(body, -1)
			if len(cells) != 1 {
				t.Errorf("%d rows show an exception message, want 1", len(cells))
			}
			for _, cell := range cells {
				if n := len(html.UnescapeString(cell[1])); n > maxRowText+len("…") {
					t.Errorf("the row's tooltip shows %d bytes of the exception message, want at most %d", n, maxRowText)
				}
				if n := len(html.UnescapeString(cell[2])); n > maxRowText+len("…") {
					t.Errorf("the row shows %d bytes of the exception message, want at most %d", n, maxRowText)
				}
			}
			// The message's view: each part cut at its cap, saying so with its full size.
			for of, limit := range map[string]int{"E": maxRenderedField, "S": maxRenderedValue} {
				if n := longest(body, of); n > limit {
					t.Errorf("the page shows %d bytes of a run of %s, want at most %d", n, of, limit)
				}
			}
			if len(body) > 2*maxRenderedValue {
				t.Errorf("the messages page is %d bytes, want at most %d", len(body), 2*maxRenderedValue)
			}
			for _, want := range []string{
				"Exception message cut for display: " + components.FormatNum(int64(tc.messageSize)) + " bytes in full.",
				"Stack trace cut for display: " + components.FormatNum(int64(tc.traceSz)) + " bytes in full.",
				"Header cut for display: " + components.FormatNum(int64(tc.messageSize)) + " bytes in full.",
				"Header cut for display: " + components.FormatNum(int64(tc.traceSz)) + " bytes in full."} {
				if !strings.Contains(body, want) {
					t.Errorf("the page does not say %q", want)
				}
			}
			if !strings.Contains(body, "&lt;b&gt;order 7&lt;/b&gt;") || strings.Contains(body, "<b>order 7") {
				t.Error("the exception message is not escaped")
			}

			// Its raw link is the messages API's answer holding that message, whole.
			raw := regexp.MustCompile(`data-testid="cut-note">[^<]*<a href="([^"]*)" data-testid="raw-message"`).FindStringSubmatch(body)
			if raw == nil {
				t.Fatal("no link to the raw message beside what was cut")
			}
			u, err := url.Parse(html.UnescapeString(raw[1]))
			if err != nil || u.Path != "/api/v1/rabbitmq/test/queues/"+vhost+"/orders.dlq/messages" {
				t.Fatalf("raw link %s (%v)", raw[1], err)
			}
			api, err := callAPI(t, h.APIMessages, "/?"+u.RawQuery, names, "test", vhost, "orders.dlq")
			if err != nil {
				t.Fatal(err)
			}
			var got browseJSON
			if err := json.Unmarshal(api.Body.Bytes(), &got); err != nil || len(got.Messages) == 0 {
				t.Fatalf("messages API: %v, %d messages", err, len(got.Messages))
			}
			m := got.Messages[len(got.Messages)-1]
			if m.MessageID != "m-big" || len(m.Headers[rabbitmodel.HeaderExceptionMessage]) != tc.messageSize ||
				len(m.Headers[rabbitmodel.HeaderExceptionStacktrace]) != tc.traceSz || m.DeadLetter == nil ||
				len(m.DeadLetter.ExceptionMessage) != tc.messageSize || !strings.HasPrefix(m.DeadLetter.ExceptionMessage, "<b>order 7</b>") {
				t.Errorf("the raw message is not the message whole: %s, headers %d and %d bytes", m.MessageID,
					len(m.Headers[rabbitmodel.HeaderExceptionMessage]), len(m.Headers[rabbitmodel.HeaderExceptionStacktrace]))
			}
		})
	}
}
