package handlers

import (
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/trace"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
)

// The console refuses to read an auto-delete queue (a read would delete it), yet its queue page
// offered "Browse messages", which led only to that refusal, and a trace linked its step to the
// messages page too. No button leads to the refusal: the queue page says why in place of the
// button, the queue list says so beside the name, a trace step links the queue's page; a durable
// queue is offered as before.
func TestAutoDeleteQueueIsNotOfferedForBrowsing(t *testing.T) {
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	for name, autoDelete := range map[string]bool{"parked.dlq": true, "orders.dlq": false} {
		if _, err := ch.QueueDeclare(name, true, autoDelete, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.Publish("", name, false, false, amqp.Publishing{MessageId: "m-1", Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	br, err := rabbit.New(rabbittest.Config(t, vhost), configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	h := NewRabbit([]RabbitBroker{br}, freshQueues{br}, func(echo.Context, string, string) layout.Meta { return layout.Meta{} }, nil)
	names := []string{"broker", "vhost", "queue"}
	const why = "auto-delete: reading would delete it"

	list, err := callAPI(t, h.BrokerPage, "/rabbitmq/test", names[:1], "test")
	if err != nil {
		t.Fatal(err)
	}
	for name, refused := range map[string]bool{"parked.dlq": true, "orders.dlq": false} {
		body := list.Body.String()
		i := strings.Index(body, `data-queue="`+name+`"`)
		if i < 0 {
			t.Fatalf("the list has no row for %s", name)
		}
		row := body[i:]
		row = row[:strings.Index(row, "</tr>")]
		if got := strings.Contains(row, `data-testid="not-browsable"`) && strings.Contains(row, why); got != refused {
			t.Errorf("%s: the list says it is not browsable: %v, want %v", name, got, refused)
		}

		page, err := callAPI(t, h.QueuePage, "/", names, "test", vhost, name)
		if err != nil {
			t.Fatal(err)
		}
		b := page.Body.String()
		browse, refusal := strings.Contains(b, `data-testid="browse-link"`), strings.Contains(b, `data-testid="browse-refused"`)
		if browse == refused || refusal != refused || refused && !strings.Contains(b, "reading it would delete it") {
			t.Errorf("%s: queue page offers the browse %v, says why not %v; want the browse offered %v", name, browse, refusal, !refused)
		}
	}

	// What the button led to: a refusal (409), the queue kept.
	if rec, err := callAPI(t, h.MessagesPage, "/", names, "test", vhost, "parked.dlq"); err != nil || rec.Code != http.StatusConflict {
		t.Errorf("the messages page of the auto-delete queue: %d %v, want the refusal", rec.Code, err)
	}
	if q, err := ch.QueueDeclarePassive("parked.dlq", true, true, false, false, nil); err != nil || q.Messages != 1 {
		t.Errorf("the auto-delete queue after the refusal: %+v %v", q, err)
	}

	// A trace's step in a queue it did not find the message in (or could not browse) links the
	// queue's page, which says whether it can be browsed; a found message links the messages.
	ref := trace.Ref{Broker: "test", Vhost: vhost, Queue: "parked.dlq", Offset: -1}
	if got, want := stepLink(trace.Step{Kind: trace.KindRabbitMQ, Ref: ref, Detail: "not browsed: queue is auto-delete"}), paths.Queue("test", vhost, "parked.dlq"); got != want {
		t.Errorf("a step not browsed links %s, want the queue's page %s", got, want)
	}
	if got, want := stepLink(trace.Step{Kind: trace.KindRabbitMQ, Ref: ref, Found: true}), paths.QueueMessages("test", vhost, "parked.dlq"); got != want {
		t.Errorf("a step found links %s, want %s", got, want)
	}
}
