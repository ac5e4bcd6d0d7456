package links

import (
	"testing"

	"github.com/redrive/redrive/ops/page"
)

// Every page a problem can name opens the route the console serves it on, its subject escaped
// as the route table reads it back, its filter as the page's query and its section as the fragment.
func TestToOpensEachPage(t *testing.T) {
	labels := map[string]string{"cluster": "main", "group": "billing/eu", "topic": "orders.DLT", "broker": "rmq",
		"vhost": "/", "queue": "orders dlq", "outbox": "orders", "job": "j-1"}
	for _, c := range []struct {
		p    page.Page
		want string
	}{
		{page.Of(page.KafkaCluster), "/kafka/main"},
		{page.Page{Kind: page.KafkaCluster, Section: "transactions"}, "/kafka/main#transactions"},
		{page.Of(page.KafkaGroup), "/kafka/main/groups/billing%2Feu"},
		{page.Of(page.ErrorGroups), "/kafka/main/topics/orders.DLT/errors"},
		{page.Of(page.RabbitBroker), "/rabbitmq/rmq"},
		{page.Of(page.Queue), "/rabbitmq/rmq/queues/%2F/orders%20dlq"},
		{page.Of(page.QueueMessages), "/rabbitmq/rmq/queues/%2F/orders%20dlq/messages"},
		{page.Of(page.Outbox), "/outboxes/orders"},
		{page.Filtered(page.Outbox, "status", "DEAD"), "/outboxes/orders?status=DEAD"},
		{page.Filtered(page.Outbox, "stuck", "true"), "/outboxes/orders?stuck=true"},
		{page.Of(page.Replays), "/replays"},
		{page.Of(page.Replay), "/replays/j-1"},
		{page.Of(page.Readiness), "/readyz"},
		{page.Of(page.Notifications), "/notifications"},
		{page.Page{}, ""},
		{page.Of("no_such_page"), ""},
	} {
		if got := To(c.p, labels); got != c.want {
			t.Errorf("To(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
