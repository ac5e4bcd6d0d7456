package search

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"github.com/tidwall/gjson"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// MatchKafka evaluates the filter over one Kafka record. false with a nil error: no match
// (including an expression that fails on this record, such as a missing key). Errors:
// ErrCostLimit, ctx's error.
func (f *Filter) MatchKafka(ctx context.Context, r kafkamodel.Record) (bool, error) {
	m, _, err := f.eval(ctx, &kafkaVars{plain: &r, seen: &r, paths: f.paths})
	return m, err
}

// MatchRabbit is MatchKafka for a RabbitMQ message.
func (f *Filter) MatchRabbit(ctx context.Context, m rabbitmodel.Message) (bool, error) {
	ok, _, err := f.eval(ctx, &rabbitVars{m: &m, paths: f.paths})
	return ok, err
}

// kafkaVars resolves a record's variables, each on first use and from no more of the record than
// it needs: key, partition, offset and timestamp from the record as fetched; size, headers and
// value from it too when there is no view (the value through its schema); dead_letter, or
// anything under a view, from the record decoded and viewed (a masked record's size is that of
// what it shows). A filter over the key decodes nothing.
type kafkaVars struct {
	plain *kafkamodel.Record    // as fetched; the whole record for MatchKafka
	lazy  kafkamodel.LazyRecord // decodes plain; nil for MatchKafka
	view  func(kafkamodel.Record) kafkamodel.Record
	seen  *kafkamodel.Record // decoded and viewed: what the reader may see; nil until needed
	shown kafkamodel.Record  // seen's storage
	paths *pathTree

	value, headers, dead any
	resolutions          ResolutionOf // from the filter (bind); nil: open
	// scratch is a scan's: the maps a record's headers and dead_letter are read through, reused
	// from one record to the next, and the texts already seen. Nil for MatchKafka.
	scratch *scanScratch
}

// scanScratch is what a scan's activation reuses from one record to the next, so that a filter
// over headers and dead-letter fields allocates nothing per record: the maps (a record's are done
// with when its evaluation is) and the CEL strings of the header values seen.
type scanScratch struct {
	texts         texts
	hsrc          scanHeaders
	dsrc          scanDeadLetter
	hmap, deadMap lazyMap
}

// reset points v at the next record of a scan, keeping the view, paths and scratch. It clears
// only what a record's evaluation sets (shown is written whole before seen points at it): a
// scan resets once a record, and clearing the whole activation, a record's worth of pointers,
// was 5% of a key filter's CPU. plain is l.Plain(), which the caller has read already.
func (v *kafkaVars) reset(l kafkamodel.LazyRecord, plain *kafkamodel.Record) {
	if v.scratch == nil {
		v.scratch = &scanScratch{}
	}
	v.plain, v.lazy, v.seen = plain, l, nil
	v.value, v.headers, v.dead = nil, nil, nil
}

// record is the record as the reader may see it, decoded and viewed (once). In a scan it shares
// the fetch's buffers (kafkamodel.LazyRecord.Decoded): what is kept of it is cloned (ScanKafka).
func (v *kafkaVars) record() *kafkamodel.Record {
	if v.seen == nil {
		v.shown = *v.lazy.Decoded()
		if v.view != nil {
			v.shown = v.view(v.shown)
		}
		v.seen = &v.shown
	}
	return v.seen
}

// content is the record whose headers and value the filter reads: the fetched one unless a view
// may mask them.
func (v *kafkaVars) content() *kafkamodel.Record {
	if v.view == nil && v.seen == nil {
		return v.plain
	}
	return v.record()
}

func (v *kafkaVars) Parent() interpreter.Activation { return nil }

func (v *kafkaVars) ResolveName(name string) (any, bool) {
	r := v.plain
	switch name {
	case "key":
		return text(r.Key), true
	case "value":
		if v.value == nil {
			c := v.content()
			d := c.ValueSchema
			if c == v.plain && v.lazy != nil {
				d = v.lazy.ValueSchema()
			}
			if d != nil && d.JSON != nil {
				v.value = document(d.JSON, v.paths)
			} else {
				v.value = payloadOf(c.Value, c.Truncated, v.paths)
			}
		}
		return v.value, true
	case "headers":
		if v.headers == nil {
			if sc := v.scratch; sc != nil {
				sc.hsrc = scanHeaders{hs: v.content().Headers, texts: &sc.texts}
				sc.hmap = lazyMap{src: &sc.hsrc}
				v.headers = &sc.hmap
			} else {
				v.headers = &lazyMap{src: headerSource(v.content().Headers)}
			}
		}
		return v.headers, true
	case "dead_letter":
		if v.dead == nil {
			if sc := v.scratch; sc != nil && v.lazy != nil {
				sc.dsrc = scanDeadLetter{v: v}
				sc.deadMap = lazyMap{src: &sc.dsrc}
				v.dead = &sc.deadMap
			} else {
				v.dead = &lazyMap{src: deadLetterSource{v.record().DeadLetter}}
			}
		}
		return v.dead, true
	case "partition":
		return int64(r.Partition), true
	case "offset":
		return r.Offset, true
	case "timestamp":
		return r.Timestamp, true
	case "size":
		if v.view != nil {
			// Masking reveals no length: under a view, the size of what the reader sees.
			return int64(v.record().Size), true
		}
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

// InState is the filter that keeps only the Kafka records whose resolution state (the resolution
// variable, answered by WithResolutions' lookup) is state, besides passing the expression: a
// scan's ?state=, as a page of records keeps its state. "" or "all" is f itself; f is unchanged.
func (f *Filter) InState(state string) *Filter {
	if f == nil || state == "" || state == "all" {
		return f
	}
	g := *f
	g.state = state
	return &g
}

// inState says whether the message act resolves is in the filter's state. A state the lookup
// could not tell is no match, and evalErr says why (counted as the expression's failures are).
func (f *Filter) inState(act interpreter.Activation) (in bool, evalErr error) {
	v, ok := act.ResolveName("resolution")
	if !ok {
		return false, nil
	}
	if e, isErr := v.(*types.Err); isErr {
		return false, e
	}
	s, _ := v.(string)
	return s == f.state, nil
}

// bind gives an activation what the filter knows beyond the message: the resolution lookup.
// Done here, at evaluation, so that the scans build their activations as they like.
func (f *Filter) bind(act interpreter.Activation) {
	if kv, ok := act.(*kafkaVars); ok {
		kv.resolutions = f.resolutions
	}
}

// deadLetterFields are the names of dead_letter's fields for a Kafka record.
var deadLetterFields = []string{"original_topic", "original_partition", "original_offset", "consumer_group", "exception_type",
	"exception_cause", "exception_message", "stacktrace", "retry_count", "message_id", "trace_id", "first_failed_at", "convention"}

// deadLetterSource is a record's decoded dead-letter fields as dead_letter's map(string, dyn):
// "" or 0 (-1 for the original partition and offset) when absent.
type deadLetterSource struct{ d *kafkamodel.DeadLetter }

func (s deadLetterSource) lookup(name string) (any, bool) {
	d := s.d
	if d == nil {
		d = &kafkamodel.DeadLetter{}
	}
	switch name {
	case "original_topic":
		return d.OriginalTopic, true
	case "original_partition":
		if d.OriginalPartition != nil {
			return int64(*d.OriginalPartition), true
		}
		return int64(-1), true
	case "original_offset":
		if d.OriginalOffset != nil {
			return *d.OriginalOffset, true
		}
		return int64(-1), true
	case "consumer_group":
		return d.ConsumerGroup, true
	case "exception_type":
		return d.ExceptionType, true
	case "exception_cause":
		return d.ExceptionCause, true
	case "exception_message":
		return d.ExceptionMessage, true
	case "stacktrace":
		return d.Stacktrace, true
	case "retry_count":
		if d.RetryCount != nil {
			return int64(*d.RetryCount), true
		}
		return int64(0), true
	case "message_id":
		return d.MessageID, true
	case "trace_id":
		return d.TraceID, true
	case "first_failed_at":
		return d.FirstFailedAt, true
	case "convention":
		return d.Convention, true
	}
	return nil, false
}

func (s deadLetterSource) whole() any {
	m := make(map[string]any, len(deadLetterFields))
	for _, f := range deadLetterFields {
		m[f], _ = s.lookup(f)
	}
	return m
}

// headerSource is a record's headers as the filter's map(string, string): the last value of
// each key, as text.
type headerSource []kafkamodel.Header

func (hs headerSource) lookup(k string) (any, bool) {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == k {
			return text(hs[i].Value), true
		}
	}
	return nil, false
}

func (hs headerSource) whole() any {
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		m[h.Key] = text(h.Value)
	}
	return m
}

// scanHeaders is headerSource for a scan: the same lookups, the values as CEL strings made once
// per distinct value (texts) rather than once per record.
type scanHeaders struct {
	hs    []kafkamodel.Header
	texts *texts
}

func (s *scanHeaders) lookup(k string) (any, bool) {
	for i := len(s.hs) - 1; i >= 0; i-- {
		if s.hs[i].Key == k {
			return s.texts.of(s.hs[i].Value), true
		}
	}
	return nil, false
}

func (s *scanHeaders) whole() any { return headerSource(s.hs).whole() }

// scanDeadLetter is deadLetterSource for a scan: a field that is a header's text is read from
// that header alone (kafkamodel.LazyRecord.DeadLetterText) when no view may mask it; any other field, or the
// whole map, from the record decoded (and viewed) as before.
type scanDeadLetter struct{ v *kafkaVars }

func (s *scanDeadLetter) lookup(name string) (any, bool) {
	v := s.v
	if v.view == nil && v.seen == nil {
		if b, ok := v.lazy.DeadLetterText(name); ok {
			return v.scratch.texts.of(b), true
		}
	}
	return deadLetterSource{v.record().DeadLetter}.lookup(name)
}

func (s *scanDeadLetter) whole() any { return deadLetterSource{s.v.record().DeadLetter}.whole() }

// texts makes the CEL strings of header values, keeping up to maxTexts of them (each at most
// maxTextLen bytes) to hand out again: a topic's headers take few distinct values (tenants,
// exception types, topics), and a scan of a million records then converts and boxes each value
// once instead of a million times. Not safe for concurrent use (one scan's).
type texts struct{ seen map[string]ref.Val } // boxed once: handing one out allocates nothing

const (
	maxTexts   = 1024
	maxTextLen = 256
)

func (t *texts) of(b []byte) any {
	if len(b) == 0 {
		return types.String("")
	}
	if len(b) > maxTextLen {
		return types.String(text(b))
	}
	if s, ok := t.seen[string(b)]; ok { // no allocation: the compiler looks up by the bytes
		return s
	}
	var s ref.Val = types.String(text(b))
	if t.seen == nil {
		t.seen = make(map[string]ref.Val)
	}
	if len(t.seen) < maxTexts {
		t.seen[string(b)] = s
	}
	return s
}

// rabbitVars resolves a message's variables, each on first use.
type rabbitVars struct {
	m                          *rabbitmodel.Message
	paths                      *pathTree
	body, headers, props, dead any
}

func (v *rabbitVars) Parent() interpreter.Activation { return nil }

func (v *rabbitVars) ResolveName(name string) (any, bool) {
	m := v.m
	switch name {
	case "body":
		if v.body == nil {
			v.body = payloadOf(m.Body, m.Truncated, v.paths)
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
				d = &rabbitmodel.DeadLetter{}
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

// payloadOf is a record's value or a message's body as a filter sees it: one cut short as its text
// (a cut JSON document would not parse), a whole one as the document down the paths t names.
func payloadOf(b []byte, truncated bool, t *pathTree) any {
	if truncated {
		return text(b)
	}
	return document(b, t)
}

// text is bytes as a filter sees them: UTF-8 as is, anything else in base64, nil as "".
func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// decoded is a JSON document as CEL values (integers as int, other numbers as double), or the
// text when b is not one JSON document (gjson's validator: the same grammar as encoding/json's).
func decoded(b []byte) any {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || !gjson.ValidBytes(t) {
		return text(b)
	}
	v, err := decodeJSON(t)
	if err != nil { // deeper than encoding/json goes
		return text(b)
	}
	return v
}

// decodeJSON decodes one valid JSON value as decoded does.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
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
