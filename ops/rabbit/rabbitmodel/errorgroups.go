package rabbitmodel

import (
	"sort"
	"time"

	"github.com/redrive/redrive/ops"
)

// ErrorGroup is every browsed message that died for the same reason in the same error group
// (ops.ErrorFingerprint of the exception message and Spring's x-exception-stacktrace, as a replay
// plan groups them): one bug, one row, whatever ids the messages carry.
type ErrorGroup struct {
	Reason string // rejected, expired, maxlen, delivery_limit; empty without x-death
	// Key is the group's key (ops.ErrorFingerprint): the exception's class — with the first
	// application frame of the stack trace when the messages carry one, "com.acme.StockException
	// at com.acme.orders.Reserve.apply" —, or its message's first
	// line with the ids and numbers in it folded ("out of stock for #"); empty when the messages
	// carry no exception message. A plan's filter.exception_type selects it.
	Key string
	// ExceptionMessage is the first message's Spring x-exception-message, an example of the group.
	ExceptionMessage string
	Count            int
	// FirstAt and LastAt bound when the group's messages died: each message's earliest x-death
	// time and its latest, or its timestamp property without x-death. Nil when no message had one.
	FirstAt *time.Time
	LastAt  *time.Time
	// OriginalQueues are the queues the messages first died in, sorted and distinct.
	OriginalQueues []string
	// Positions are the group's messages' Message.Position, in browse order.
	Positions []int
}

// ErrorGroups groups browsed messages by (dead-letter reason, error group key), largest group
// first (ties: most recent LastAt first, then by reason and key). Messages without dead-letter
// headers form the group with an empty reason and message.
func ErrorGroups(msgs []Message) []ErrorGroup {
	type key struct{ reason, message string }
	groups := map[key]*ErrorGroup{}
	queues := map[key]map[string]bool{}
	var order []key
	for _, m := range msgs {
		var k key
		if dl := m.DeadLetter; dl != nil {
			k = key{dl.Reason, ops.ErrorFingerprint(dl.ExceptionMessage, dl.Stacktrace)}
		}
		g := groups[k]
		if g == nil {
			g = &ErrorGroup{Reason: k.reason, Key: k.message, OriginalQueues: []string{}}
			if dl := m.DeadLetter; dl != nil {
				g.ExceptionMessage = dl.ExceptionMessage
			}
			groups[k], queues[k] = g, map[string]bool{}
			order = append(order, k)
		}
		g.Count++
		g.Positions = append(g.Positions, m.Position)
		first, last := deathSpan(m)
		if first != nil && (g.FirstAt == nil || first.Before(*g.FirstAt)) {
			g.FirstAt = first
		}
		if last != nil && (g.LastAt == nil || last.After(*g.LastAt)) {
			g.LastAt = last
		}
		if m.DeadLetter != nil && m.DeadLetter.OriginalQueue != "" && !queues[k][m.DeadLetter.OriginalQueue] {
			queues[k][m.DeadLetter.OriginalQueue] = true
			g.OriginalQueues = append(g.OriginalQueues, m.DeadLetter.OriginalQueue)
		}
	}
	out := make([]ErrorGroup, 0, len(order))
	for _, k := range order {
		g := groups[k]
		sort.Strings(g.OriginalQueues)
		out = append(out, *g)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		switch {
		case a.LastAt != nil && b.LastAt == nil:
			return true
		case a.LastAt == nil && b.LastAt != nil:
			return false
		case a.LastAt != nil && !a.LastAt.Equal(*b.LastAt):
			return a.LastAt.After(*b.LastAt)
		}
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		return a.Key < b.Key
	})
	return out
}

// deathSpan is when a message first and last died, falling back to its timestamp property.
func deathSpan(m Message) (first, last *time.Time) {
	if dl := m.DeadLetter; dl != nil {
		for _, d := range dl.Deaths {
			if d.Time == nil {
				continue
			}
			if first == nil || d.Time.Before(*first) {
				first = d.Time
			}
			if last == nil || d.Time.After(*last) {
				last = d.Time
			}
		}
	}
	if first == nil && m.Properties.Timestamp != nil {
		first, last = m.Properties.Timestamp, m.Properties.Timestamp
	}
	return clone(first), clone(last)
}

func clone(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
