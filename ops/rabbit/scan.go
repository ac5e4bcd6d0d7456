package rabbit

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Scan reads up to limit (1..MaxPeek) messages of a queue's head as Browse does — the queue is
// left as it was — and hands each to each as it arrives, as shown (bodies cut at MaxBodyBytes,
// headers rendered), for a search or an export. Once each returns false the read stops (a search
// at its limit or out of time): of a classic queue at most the rest of one consumer's window was
// already on its way, and every message taken goes back to the queue in order before Scan returns.
// A quorum queue is read whole all the same on RabbitMQ 3.x (see Browse); each is handed nothing
// more. A message taken into Redrive's archive (Custody) is not handed to each: it is no longer in
// the queue. The result holds no messages. Errors as Browse.
func (b *Broker) Scan(ctx context.Context, vhost, queue string, limit int, each func(Message) bool) (BrowseResult, error) {
	return b.browse(ctx, vhost, queue, limit, MaxPeek, func(d amqp.Delivery, pos int, kept bool) bool {
		if kept {
			return true
		}
		return each(b.toMessage(d, pos))
	})
}
