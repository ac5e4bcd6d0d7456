package rabbitmodel

// Version is the RabbitMQ version of the broker in front of the console, as its management API
// reports it (GET /api/overview, rabbitmq_version). The zero Version is an unknown one and gets
// the rules of the oldest supported series.
type Version struct {
	Major, Minor int
	Text         string // as reported: "4.0.5"
}

// DefaultDeliveryLimit4 is RabbitMQ 4.x's delivery limit of a quorum queue nobody limited.
const DefaultDeliveryLimit4 = 20

// QuorumReturnsToHead reports whether v's quorum queues put messages returned by closing the
// channel that holds them (after cancelling its consumer) back at their head, in their order:
// measured on 4.0.5 with and without a limit. On 3.10 every return goes to the back, so a browse
// must read and return the queue whole. The adapter's rules for a series take it from here.
func (v Version) QuorumReturnsToHead() bool { return v.Major >= 4 }
