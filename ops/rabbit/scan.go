package rabbit

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Scan reads up to limit (1..MaxPeek) messages of a queue's head as Browse does — the queue is
// left as it was — and hands each to each as it arrives, as shown (bodies cut at MaxBodyBytes,
// headers rendered), for a search or an export. Once each returns false it is handed nothing
// more; the messages already taken are still returned to the queue in order. The result holds no
// messages. Errors as Browse.
func (b *Broker) Scan(ctx context.Context, vhost, queue string, limit int, each func(Message) bool) (BrowseResult, error) {
	stopped := false
	return b.browse(ctx, vhost, queue, limit, MaxPeek, func(d amqp.Delivery, pos int) {
		if !stopped && !each(b.toMessage(d, pos)) {
			stopped = true
		}
	})
}
