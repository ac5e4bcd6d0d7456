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
	"github.com/redrive/redrive/views/layout"
)

// An exclusive DLQ was listed as browsable, and its browse (the messages page) ended in RabbitMQ's
// RESOURCE_LOCKED. The queue list says it is not browsable and why, as for an auto-delete queue;
// its messages page is the refusal, in words, and the queue keeps its messages.
func TestExclusiveQueueIsNotOfferedForBrowsing(t *testing.T) {
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	if _, err := ch.QueueDeclare("owned.dlq", false, false, true, false, nil); err != nil { // exclusive to this connection
		t.Fatal(err)
	}
	if err := ch.Publish("", "owned.dlq", false, false, amqp.Publishing{MessageId: "m-1", Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	br, err := rabbit.New(rabbittest.Config(t, vhost), configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	h := NewRabbit([]RabbitBroker{br}, freshQueues{br}, func(echo.Context, string, string) layout.Meta { return layout.Meta{} }, nil)
	names := []string{"broker", "vhost", "queue"}

	list, err := callAPI(t, h.BrokerPage, "/rabbitmq/test", names[:1], "test")
	if err != nil {
		t.Fatal(err)
	}
	body := list.Body.String()
	i := strings.Index(body, `data-queue="owned.dlq"`)
	if i < 0 {
		t.Fatalf("the list has no row for owned.dlq")
	}
	row := body[i:]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, `data-testid="not-browsable"`) || !strings.Contains(row, "exclusive: only the connection that declared it") {
		t.Errorf("the list does not say the exclusive queue is not browsable: %s", row)
	}
	if rec, err := callAPI(t, h.MessagesPage, "/", names, "test", vhost, "owned.dlq"); err != nil || rec.Code != http.StatusConflict ||
		!strings.Contains(rec.Body.String(), "is exclusive") {
		t.Errorf("the messages page of the exclusive queue: %d %v, want a 409 saying why", rec.Code, err)
	}
	if q, err := ch.QueueDeclarePassive("owned.dlq", false, false, true, false, nil); err != nil || q.Messages != 1 {
		t.Errorf("the exclusive queue after the refusal: %+v %v", q, err)
	}
}
