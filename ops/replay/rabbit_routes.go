package replay

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/source"
)

// rabbitRoutes gathers, chunk by chunk, what a RabbitMQ plan's warnings say of the queues its
// publishes reach besides the one each message died in. A replay publishes to the message's
// original exchange with its original routing key, so the broker routes it as it routed the
// original: every queue bound there gets a copy, and the consumers of the others (an audit, a
// projection) had the message once already. The Kafka counterpart is warningCounter's other groups.
type rabbitRoutes struct {
	e *Engine
	// router reads the bindings of the broker and vhost of the plan's first publish: a plan's
	// messages are all of one (the queue's, or the archived message's).
	router        *rabbitRouter
	broker, vhost string
	routes        map[[2]string]rabbitRoute // exchange, routing key → where it leads
	others        map[string]*otherQueue    // a queue reached besides the one a message died in
	failed        bool                      // the bindings could not be read
}

type rabbitRoute struct {
	queues []string
	exact  bool
}

// otherQueue is what a plan's publishes leave in one queue they were not meant for.
type otherQueue struct {
	messages  int
	exchanges []string        // in the order met
	keys      map[string]bool // the routing keys that lead there
	firstKey  string
	inexact   bool // reached through an exchange that routes by what the console cannot see
	// verdicts are the queue's consumer's inbox verdicts of the messages (nil: no inbox, or
	// unread: it could not be read).
	verdicts map[inbox.Verdict]int
	unread   bool
}

// newRabbitRoutes is the warnings' gatherer of a plan that publishes to RabbitMQ: from a queue, or
// an archived message restored to its original destination; nil for every other plan.
func newRabbitRoutes(e *Engine, src Source) *rabbitRoutes {
	if (src.Kind != source.RabbitMQ && src.Kind != source.Archive) || src.discards() {
		return nil
	}
	return &rabbitRoutes{e: e, routes: map[[2]string]rabbitRoute{}, others: map[string]*otherQueue{}}
}

func (w *rabbitRoutes) add(ctx context.Context, items []Item) {
	if w == nil || w.failed {
		return
	}
	ids := map[string][]string{} // other queue → message ids
	for _, it := range items {
		d := it.Destination
		if it.Action != Publish || d.Kind != source.RabbitMQ || d.Exchange == "" || (w.router != nil && (d.Broker != w.broker || d.Vhost != w.vhost)) {
			continue // the default exchange routes to the one queue the key names
		}
		if w.router == nil {
			r, err := configured(w.e.rabbit, "source.broker", "rabbitmq broker", d.Broker)
			if err != nil {
				return // the plan fails on it
			}
			w.router, w.broker, w.vhost = &rabbitRouter{r: r, vhost: d.Vhost}, d.Broker, d.Vhost
		}
		key := [2]string{d.Exchange, d.RoutingKey}
		rt, ok := w.routes[key]
		if !ok {
			queues, exact, err := w.router.routes(ctx, d.Exchange, d.RoutingKey)
			if err != nil {
				w.failed = true
				return
			}
			rt = rabbitRoute{queues: queues, exact: exact}
			w.routes[key] = rt
		}
		for _, q := range rt.queues {
			if w.meantFor(it, q, len(rt.queues)) {
				continue
			}
			o := w.others[q]
			if o == nil {
				o = &otherQueue{keys: map[string]bool{}, firstKey: d.RoutingKey}
				w.others[q] = o
			}
			o.messages++
			if !slices.Contains(o.exchanges, d.Exchange) {
				o.exchanges = append(o.exchanges, d.Exchange)
			}
			o.keys[d.RoutingKey] = true
			o.inexact = o.inexact || !rt.exact
			if it.MessageID != "" {
				ids[q] = append(ids[q], it.MessageID)
			}
		}
	}
	for q, messageIDs := range ids {
		o := w.others[q]
		in, ok := w.e.inboxes[w.e.consumerForQueue(w.broker, w.vhost, q)]
		if !ok || o.unread {
			continue
		}
		v, err := in.Verdicts(ctx, messageIDs)
		if err != nil {
			o.unread = true
			continue
		}
		if o.verdicts == nil {
			o.verdicts = map[inbox.Verdict]int{}
		}
		for _, verdict := range v {
			o.verdicts[verdict]++
		}
	}
}

// meantFor reports whether queue q, one of the n its route reaches, is where it was going: the
// queue it died in, as its headers name it; for a message that names none (Spring's
// RepublishMessageRecoverer puts x-original-exchange and x-original-routingKey only), the one queue
// its route reaches, or the queue of the consumer the plan found for it (rabbitConsumerSet.byRoute).
func (w *rabbitRoutes) meantFor(it Item, q string, n int) bool {
	if it.diedIn != "" {
		return q == it.diedIn
	}
	return n == 1 || (it.Consumer != "" && w.e.consumerForQueue(w.broker, w.vhost, q) == it.Consumer)
}

// warnings names each other queue the replay reaches, how, and its consumer's inbox verdicts.
func (w *rabbitRoutes) warnings() []string {
	if w == nil {
		return nil
	}
	if w.failed {
		return []string{"the broker's bindings could not be read, so which queues besides the ones the messages died in receive the replay is not known"}
	}
	queues := make([]string, 0, len(w.others))
	for q := range w.others {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	out := make([]string, 0, len(queues))
	for _, q := range queues {
		o := w.others[q]
		via := "exchange " + o.exchanges[0]
		if len(o.exchanges) > 1 {
			via = "exchanges " + strings.Join(o.exchanges, ", ")
		}
		if len(o.keys) == 1 {
			via += fmt.Sprintf(" with routing key %q", o.firstKey)
		} else {
			via += fmt.Sprintf(" with %d of the routing keys (%q, …)", len(o.keys), o.firstKey)
		}
		verb := "will receive"
		if o.inexact {
			verb = "may receive (it is bound to an exchange that routes by what the console cannot see)"
		}
		msg := fmt.Sprintf("queue %s is also bound to %s and %s %d of the replayed messages", q, via, verb, o.messages)
		consumer := w.e.consumerForQueue(w.broker, w.vhost, q)
		_, hasInbox := w.e.inboxes[consumer]
		switch {
		case consumer == "":
			msg += " (no consumer is configured for it, so whether its consumer processed them is unknown)"
		case !hasInbox:
			msg += fmt.Sprintf(" (no inbox configured for its consumer %s: its verdicts are unknown)", consumer)
		case o.unread:
			msg += fmt.Sprintf(" (the inbox of its consumer %s could not be read)", consumer)
		default:
			msg = fmt.Sprintf("%s; its inbox (%s): %d processed, %d in progress, %d not processed", msg, consumer,
				o.verdicts[inbox.Processed], o.verdicts[inbox.InProgress], o.verdicts[inbox.NotProcessed])
		}
		out = append(out, msg)
	}
	return out
}
