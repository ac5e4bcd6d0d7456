package rabbitmodel

import (
	"sort"
	"time"
)

// Edge is one queue's dead-lettering: where the broker sends the messages that die in it.
type Edge struct {
	FromVhost string
	FromQueue string
	// Exchange is the queue's effective dead-letter exchange; "" is the default exchange, which
	// routes to the queue named by the routing key.
	Exchange     string
	ExchangeType string // direct, fanout, topic, headers, …; empty when the exchange does not exist
	// RoutingKey is the queue's dead-letter routing key. When it is empty, dead letters keep the
	// routing keys they were published with; OwnKeys then lists the keys the queue's messages
	// plausibly carry (its name and its non-wildcard binding keys), which routes are resolved with.
	RoutingKey string
	OwnKeys    []string
	// ToQueues are the queues (in FromVhost) the exchange routes the dead letters to, sorted;
	// exchange-to-exchange bindings and alternate exchanges (declared as an argument) are followed.
	ToQueues []string
	// AllBound is true when routing depends on what Redrive cannot see (message headers for a
	// headers exchange, a plugin's exchange type): ToQueues are then every queue bound to it.
	AllBound bool
	// Missing is true when the dead-letter exchange does not exist: the broker drops these dead letters.
	Missing bool
	Note    string // why the route is approximate or empty, for people
}

// RetryLoop is a retry queue: a queue with a message TTL whose dead letters go back to a work
// queue that itself dead-letters into the retry queue, so failed messages return after Delay.
type RetryLoop struct {
	Vhost      string
	RetryQueue string
	WorkQueue  string
	Delay      time.Duration // the retry queue's message TTL
}

// Topology is the dead-letter graph of the watched vhosts.
type Topology struct {
	// Queues are the queues as Queues returns them, with IsDeadLetterQueue resolved through
	// exchanges and bindings.
	Queues []Queue
	// Edges has one entry per queue with a dead-letter exchange, sorted by vhost and queue.
	Edges []Edge
	// DLQs are the dead-letter queues: queues matching the dead_letter_queues patterns, and queues
	// receiving dead letters other than retry queues and the work queues their loops return to.
	DLQs map[QueueRef]bool
	// RetryQueues marks the retry queues of RetryLoops.
	RetryQueues map[QueueRef]bool
	RetryLoops  []RetryLoop // sorted by vhost, retry queue, work queue
}

// DeadLettersFrom lists the queues of vhost that dead-letter into queue, sorted.
func DeadLettersFrom(t Topology, vhost, queue string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, e := range t.Edges {
		if e.FromVhost != vhost || seen[e.FromQueue] {
			continue
		}
		for _, q := range e.ToQueues {
			if q == queue {
				seen[e.FromQueue] = true
				out = append(out, e.FromQueue)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// DLQTarget is one dead-letter queue and the exchanges its messages were first published to: the
// exchanges bound to the queues that dead-letter into it, where a replay republishes.
type DLQTarget struct {
	Vhost, Queue string
	Exchanges    []string // sorted; "" is the default exchange
}
