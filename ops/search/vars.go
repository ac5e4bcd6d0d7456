package search

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"

	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/rabbit"
)

// MatchKafka evaluates the filter over one Kafka record. false with a nil error: no match
// (including an expression that fails on this record, such as a missing key). Errors:
// ErrCostLimit, ctx's error.
func (f *Filter) MatchKafka(ctx context.Context, r kafka.Record) (bool, error) {
	m, _, err := f.eval(ctx, newKafkaVars(&r))
	return m, err
}

// MatchRabbit is MatchKafka for a RabbitMQ message.
func (f *Filter) MatchRabbit(ctx context.Context, m rabbit.Message) (bool, error) {
	ok, _, err := f.eval(ctx, &rabbitVars{m: &m})
	return ok, err
}

// kafkaVars resolves a record's variables, each on first use: a filter over the key never decodes
// the value.
type kafkaVars struct {
	r                    *kafka.Record
	value, headers, dead any
	resolutions          ResolutionOf // from the filter (bind); nil: open
}

func newKafkaVars(r *kafka.Record) *kafkaVars { return &kafkaVars{r: r} }

func (v *kafkaVars) Parent() interpreter.Activation { return nil }

func (v *kafkaVars) ResolveName(name string) (any, bool) {
	r := v.r
	switch name {
	case "key":
		return text(r.Key), true
	case "value":
		if v.value == nil {
			if d := r.ValueSchema; d != nil && d.JSON != nil {
				v.value = decoded(d.JSON)
			} else if r.Truncated {
				v.value = text(r.Value)
			} else {
				v.value = decoded(r.Value)
			}
		}
		return v.value, true
	case "headers":
		if v.headers == nil {
			m := make(map[string]string, len(r.Headers))
			for _, h := range r.Headers {
				m[h.Key] = text(h.Value)
			}
			v.headers = m
		}
		return v.headers, true
	case "dead_letter":
		if v.dead == nil {
			v.dead = kafkaDeadLetter(r.DeadLetter)
		}
		return v.dead, true
	case "partition":
		return int64(r.Partition), true
	case "offset":
		return r.Offset, true
	case "timestamp":
		return r.Timestamp, true
	case "size":
		return int64(r.Size), true
	case "resolution":
		if v.resolutions == nil {
			return "open", true
		}
		state, err := v.resolutions(r.Partition, r.Offset)
		if err != nil {
			// The expression fails on this record (no match, counted as an evaluation error):
			// "open" would be a guess, and a filter on it could select resolved records.
			return types.WrapErr(err), true
		}
		return state, true
	}
	return nil, false
}

// ResolutionOf tells a Kafka record's resolution state (open, resolved, ignored, replayed) by its
// partition and offset, for the resolution variable. The state lives in Redrive's store, not in
// the record: the caller (a handler, the replay planner) passes a lookup of the topic it scans.
type ResolutionOf func(partition int32, offset int64) (string, error)

// WithResolutions is the filter answering the resolution variable with lookup; f is unchanged
// (a compiled filter is shared).
func (f *Filter) WithResolutions(lookup ResolutionOf) *Filter {
	if f == nil {
		return nil
	}
	g := *f
	g.resolutions = lookup
	return &g
}

// bind gives an activation what the filter knows beyond the message: the resolution lookup.
// Done here, at evaluation, so that the scans build their activations as they like.
func (f *Filter) bind(act interpreter.Activation) {
	if kv, ok := act.(*kafkaVars); ok {
		kv.resolutions = f.resolutions
	}
}

func kafkaDeadLetter(d *kafka.DeadLetter) map[string]any {
	if d == nil {
		d = &kafka.DeadLetter{}
	}
	m := map[string]any{"original_topic": d.OriginalTopic, "original_partition": int64(-1), "original_offset": int64(-1),
		"consumer_group": d.ConsumerGroup, "exception_type": d.ExceptionType, "exception_cause": d.ExceptionCause,
		"exception_message": d.ExceptionMessage, "stacktrace": d.Stacktrace, "retry_count": int64(0), "message_id": d.MessageID,
		"trace_id": d.TraceID, "first_failed_at": d.FirstFailedAt, "convention": d.Convention}
	if d.OriginalPartition != nil {
		m["original_partition"] = int64(*d.OriginalPartition)
	}
	if d.OriginalOffset != nil {
		m["original_offset"] = *d.OriginalOffset
	}
	if d.RetryCount != nil {
		m["retry_count"] = int64(*d.RetryCount)
	}
	return m
}

// rabbitVars resolves a message's variables, each on first use.
type rabbitVars struct {
	m                          *rabbit.Message
	body, headers, props, dead any
}

func (v *rabbitVars) Parent() interpreter.Activation { return nil }

func (v *rabbitVars) ResolveName(name string) (any, bool) {
	m := v.m
	switch name {
	case "body":
		if v.body == nil {
			if m.Truncated {
				v.body = text(m.Body)
			} else {
				v.body = decoded(m.Body)
			}
		}
		return v.body, true
	case "headers":
		if v.headers == nil {
			hs := make(map[string]string, len(m.Headers))
			for _, h := range m.Headers {
				hs[h.Key] = h.Value
			}
			v.headers = hs
		}
		return v.headers, true
	case "properties":
		if v.props == nil {
			p := m.Properties
			ts := time.Time{}
			if p.Timestamp != nil {
				ts = *p.Timestamp
			}
			v.props = map[string]any{"message_id": p.MessageID, "correlation_id": p.CorrelationID, "timestamp": ts,
				"type": p.Type, "content_type": p.ContentType, "content_encoding": p.ContentEncoding, "app_id": p.AppID,
				"user_id": p.UserID, "delivery_mode": int64(p.DeliveryMode), "priority": int64(p.Priority),
				"expiration": p.Expiration, "reply_to": p.ReplyTo}
		}
		return v.props, true
	case "routing_key":
		return m.RoutingKey, true
	case "exchange":
		return m.Exchange, true
	case "dead_letter":
		if v.dead == nil {
			d := m.DeadLetter
			if d == nil {
				d = &rabbit.DeadLetter{}
			}
			first := time.Time{}
			if d.FirstDeathAt != nil {
				first = *d.FirstDeathAt
			}
			keys := d.OriginalRoutingKeys
			if keys == nil {
				keys = []string{}
			}
			v.dead = map[string]any{"reason": d.Reason, "count": d.Count, "original_queue": d.OriginalQueue,
				"original_exchange": d.OriginalExchange, "original_routing_keys": keys, "first_death_at": first,
				"exception_message": d.ExceptionMessage, "stacktrace": d.Stacktrace, "last_queue": d.LastQueue,
				"first_reason": d.FirstReason, "replay_count": int64(d.ReplayCount), "message_id": m.MessageID}
		}
		return v.dead, true
	}
	return nil, false
}

// text is bytes as a filter sees them: UTF-8 as is, anything else in base64, nil as "".
func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// decoded is a JSON document as CEL values (integers as int, other numbers as double), or the
// text when b is not JSON.
func decoded(b []byte) any {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[' && t[0] != '"' && !json.Valid(t)) {
		return text(b)
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return text(b)
	}
	return numbers(v)
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}
