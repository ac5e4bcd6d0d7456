package handlers

import (
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/views/layout"
)

// A stream is no replay or discard source (the engine refuses such a plan, 409), yet its messages
// page offered the plan form, each message's Replay button, the selection's checkboxes and the
// scan's "Plan replay of the matches": every one led to that refusal. A stream's page offers none
// of them and says why where the form was; a classic queue's page is as before.
func TestStreamMessagesPageOffersNoPlan(t *testing.T) {
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	for name, args := range map[string]amqp.Table{"audit.stream": {"x-queue-type": "stream"}, "orders.dlq": nil} {
		if _, err := ch.QueueDeclare(name, true, false, false, false, args); err != nil {
			t.Fatal(err)
		}
		if err := ch.Publish("", name, false, false, amqp.Publishing{MessageId: "m-1", DeliveryMode: amqp.Persistent,
			// Spring's headers name where it came from (RabbitMQ keeps a client's x-death out of a stream).
			Headers: amqp.Table{rabbit.HeaderOriginalExchange: "orders", rabbit.HeaderOriginalRoutingKey: "order.created",
				rabbit.HeaderExceptionMessage: "boom"}, Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	br, err := rabbit.New(rabbittest.Config(t, vhost), configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	h := NewRabbit([]RabbitBroker{br}, freshQueues{br}, func(echo.Context, string, string) layout.Meta {
		return layout.Meta{CanOperate: true}
	}, nil)
	for name, stream := range map[string]bool{"audit.stream": true, "orders.dlq": false} {
		rec, err := callAPI(t, h.MessagesPage, "/?limit=10", []string{"broker", "vhost", "queue"}, "test", vhost, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body := rec.Body.String()
		if !strings.Contains(body, `data-testid="message-row"`) {
			t.Fatalf("%s: no message shown", name)
		}
		for _, offer := range []string{`data-testid="plan-form"`, `data-testid="plan-selected"`, `data-testid="select-message"`, `data-testid="replay-one"`} {
			if got := strings.Contains(body, offer); got == stream {
				t.Errorf("%s: offers %s: %v", name, offer, got)
			}
		}
		if got := strings.Contains(body, `data-testid="no-plan"`) && strings.Contains(body, "a stream keeps its messages"); got != stream {
			t.Errorf("%s: says why no plan is offered: %v", name, got)
		}
	}
}
