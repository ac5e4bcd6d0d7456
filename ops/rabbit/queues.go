package rabbit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// queueColumns are the only fields Queues asks for; without columns the API also sends garbage
// collection, backing-queue and consumer details for every queue.
var queueColumns = []string{
	"name", "vhost", "type", "state", "policy", "operator_policy", "effective_policy_definition",
	"arguments", "messages", "messages_ready", "messages_unacknowledged", "consumers",
	"message_stats.publish_details.rate", "message_stats.deliver_get_details.rate",
	"message_stats.ack_details.rate", "message_stats.redeliver_details.rate",
	"delivery_limit", // RabbitMQ 4.x: a quorum queue's effective limit (a number or "unlimited")
	// RabbitMQ 4.x: how many of a quorum queue's ready messages were returned and wait ahead of
	// the others (its returns queue, delivered first).
	"messages_ready_returned",
	"auto_delete", "exclusive",
	// Quorum queues: the dead letters kept until a target confirms them (at-least-once).
	"messages_dlx",
}

type rateDetails struct {
	Rate float64 `json:"rate"`
}

// wireQueue is one element of GET /api/queues with queueColumns. Maps are raw because older
// brokers encode an empty definition as [] (an empty Erlang proplist) instead of {}. The counts are
// pointers: the API leaves them out when it has none (statistics disabled, or not reported yet),
// and an absent count is not a zero.
type wireQueue struct {
	Name                      string          `json:"name"`
	Vhost                     string          `json:"vhost"`
	Type                      string          `json:"type"`
	State                     string          `json:"state"`
	Policy                    *string         `json:"policy"`
	OperatorPolicy            *string         `json:"operator_policy"`
	EffectivePolicyDefinition json.RawMessage `json:"effective_policy_definition"`
	Arguments                 json.RawMessage `json:"arguments"`
	Messages                  *int64          `json:"messages"`
	MessagesReady             *int64          `json:"messages_ready"`
	MessagesUnacknowledged    *int64          `json:"messages_unacknowledged"`
	Consumers                 *int64          `json:"consumers"`
	DeliveryLimit             json.RawMessage `json:"delivery_limit"`
	MessagesReadyReturned     int64           `json:"messages_ready_returned"`
	MessagesDLX               int64           `json:"messages_dlx"`
	AutoDelete                bool            `json:"auto_delete"`
	Exclusive                 *bool           `json:"exclusive"` // null for quorum queues on 4.x
	MessageStats              *struct {
		Publish    rateDetails `json:"publish_details"`
		DeliverGet rateDetails `json:"deliver_get_details"`
		Ack        rateDetails `json:"ack_details"`
		Redeliver  rateDetails `json:"redeliver_details"`
	} `json:"message_stats"`
}

// Queues lists every queue in the watched vhosts with one management API call (GET /api/queues,
// or /api/queues/{vhost} when one vhost is watched, with only the columns used), sorted by vhost
// and name. When the broker does not report effective_policy_definition (an older management
// plugin), the policies are fetched once and matched by the policy names the queues report. A
// single watched vhost that does not exist is an ops.ErrNotFound.
func (b *Broker) Queues(ctx context.Context) ([]Queue, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	qs, err := b.listQueues(ctx)
	if err != nil {
		return nil, b.fail("queues", err)
	}
	return qs, nil
}

func (b *Broker) listQueues(ctx context.Context) ([]Queue, error) {
	p := "queues"
	if len(b.vhosts) == 1 {
		p += "/" + url.PathEscape(b.vhosts[0])
	}
	var wire []wireQueue
	if err := b.getJSON(ctx, p, url.Values{"columns": {b.columns()}}, &wire); err != nil {
		return nil, err
	}
	out := make([]Queue, 0, len(wire))
	rules := b.rules(ctx)
	var policies *policyBook
	for _, w := range wire {
		if !b.watched(w.Vhost) {
			continue
		}
		def, ok := rawMap(w.EffectivePolicyDefinition)
		if !ok && (deref(w.Policy) != "" || deref(w.OperatorPolicy) != "") {
			if policies == nil {
				var err error
				if policies, err = b.fetchPolicies(ctx); err != nil {
					return nil, err
				}
			}
			def = policies.effective(w.Vhost, deref(w.Policy), deref(w.OperatorPolicy))
		}
		out = append(out, b.toQueue(w, def, rules))
	}
	b.markStatsDisabled(ctx, out)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Vhost != out[j].Vhost {
			return out[i].Vhost < out[j].Vhost
		}
		return out[i].Name < out[j].Name
	})
	// Dead-lettering through the default exchange names its target queue: no bindings needed.
	byRef := make(map[QueueRef]int, len(out))
	for i, q := range out {
		byRef[q.Ref()] = i
	}
	for _, q := range out {
		if q.HasDeadLetterExchange && q.DeadLetterExchange == "" {
			if i, ok := byRef[QueueRef{Vhost: q.Vhost, Name: q.DeadLetterRoutingKey}]; ok && q.DeadLetterRoutingKey != "" {
				out[i].IsDeadLetterQueue = true
			}
		}
	}
	return out, nil
}

func (b *Broker) columns() string {
	cols := queueColumns
	if b.noEffectivePolicy {
		cols = make([]string, 0, len(queueColumns))
		for _, c := range queueColumns {
			if c != "effective_policy_definition" {
				cols = append(cols, c)
			}
		}
	}
	return strings.Join(cols, ",")
}

// queueInfo fetches one queue (GET /api/queues/{vhost}/{name}); unknown vhost or queue → ErrNotFound.
func (b *Broker) queueInfo(ctx context.Context, vhost, name string) (Queue, error) {
	w, err := b.getQueue(ctx, vhost, name)
	if errors.Is(err, ops.ErrNotFound) {
		// The management API's words ("HTTP 404: Not Found") name no queue; a person reads which.
		return Queue{}, &ops.Error{Kind: ops.ErrNotFound, Err: err,
			Message: fmt.Sprintf("queue %q not found in vhost %q of rabbitmq broker %q", name, vhost, b.name)}
	}
	if err != nil {
		return Queue{}, err
	}
	def, ok := rawMap(w.EffectivePolicyDefinition)
	if !ok && (deref(w.Policy) != "" || deref(w.OperatorPolicy) != "") {
		policies, err := b.fetchPolicies(ctx)
		if err != nil {
			return Queue{}, err
		}
		def = policies.effective(w.Vhost, deref(w.Policy), deref(w.OperatorPolicy))
	}
	q := []Queue{b.toQueue(w, def, b.rules(ctx))}
	b.markStatsDisabled(ctx, q)
	return q[0], nil
}

// markStatsDisabled sets StatsDisabled on the queues whose statistics are unreported when the
// broker says it reports none (GET /api/overview?columns=disable_stats, asked only then). A broker
// that does not say, or does not answer, leaves them "not reported yet".
func (b *Broker) markStatsDisabled(ctx context.Context, qs []Queue) {
	unreported := false
	for _, q := range qs {
		unreported = unreported || q.CountsUnreported || q.ConsumersUnreported
	}
	if !unreported {
		return
	}
	var o struct {
		DisableStats bool `json:"disable_stats"`
	}
	if err := b.getJSON(ctx, "overview", url.Values{"columns": {"disable_stats"}}, &o); err != nil || !o.DisableStats {
		return
	}
	for i := range qs {
		if qs[i].CountsUnreported || qs[i].ConsumersUnreported {
			qs[i].StatsDisabled = true
		}
	}
}

// dotSegment reports whether name is "." or "..": RabbitMQ's HTTP server resolves such a path
// segment away however it is escaped ("%2E" and "%2E%2E" too), so no management path names it.
func dotSegment(name string) bool { return name == "." || name == ".." }

// getQueue reads one queue: GET /api/queues/{vhost}/{name}; for a vhost or queue named "." or
// "..", the queue list filtered to its name (a regular expression, anchored) and matched on both.
func (b *Broker) getQueue(ctx context.Context, vhost, name string) (wireQueue, error) {
	q := url.Values{"columns": {b.columns()}}
	if !dotSegment(vhost) && !dotSegment(name) {
		var w wireQueue
		err := b.getJSON(ctx, "queues/"+url.PathEscape(vhost)+"/"+url.PathEscape(name), q, &w)
		return w, err
	}
	p := "queues"
	if !dotSegment(vhost) {
		p += "/" + url.PathEscape(vhost)
	}
	q.Set("name", "^"+regexp.QuoteMeta(name)+"$")
	q.Set("use_regex", "true")
	q.Set("page", "1")
	q.Set("page_size", "500")
	var page struct {
		Items []wireQueue `json:"items"`
	}
	if err := b.getJSON(ctx, p, q, &page); err != nil {
		return wireQueue{}, err
	}
	for _, w := range page.Items {
		if w.Vhost == vhost && w.Name == name {
			return w, nil
		}
	}
	return wireQueue{}, &apiError{Status: http.StatusNotFound, Reason: "Not Found"}
}

func (b *Broker) toQueue(w wireQueue, policy map[string]any, rules quorumRules) Queue {
	args, _ := rawMap(w.Arguments)
	q := Queue{
		Vhost:          w.Vhost,
		Name:           w.Name,
		Type:           w.Type,
		State:          w.State,
		ReadyReturned:  w.MessagesReadyReturned,
		DeadLetterHeld: w.MessagesDLX,
		AutoDelete:     w.AutoDelete,
		Exclusive:      w.Exclusive != nil && *w.Exclusive,
		Policy:         deref(w.Policy),
		OperatorPolicy: deref(w.OperatorPolicy),
		Arguments:      make(map[string]string, len(args)),
	}
	if q.Type == "" {
		q.Type = TypeClassic // brokers before 3.8 have no queue types
	}
	// The three counts come together (one statistics record), as do the consumers and the rates;
	// with management.enable_queue_totals the counts come without the rest.
	if w.Messages == nil || w.MessagesReady == nil || w.MessagesUnacknowledged == nil {
		q.CountsUnreported, q.ReadyReturned, q.DeadLetterHeld = true, 0, 0
	} else {
		q.Total, q.Ready, q.Unacked = *w.Messages, *w.MessagesReady, *w.MessagesUnacknowledged
	}
	if w.Consumers == nil {
		q.ConsumersUnreported = true
	} else if s := w.MessageStats; s != nil {
		q.Consumers = *w.Consumers
		q.PublishRate, q.DeliverRate, q.AckRate, q.RedeliverRate = s.Publish.Rate, s.DeliverGet.Rate, s.Ack.Rate, s.Redeliver.Rate
	} else {
		q.Consumers = *w.Consumers
	}
	for k, v := range args {
		q.Arguments[k] = renderJSONValue(v)
	}
	s := effectiveSettings(q.Type, args, policy)
	q.DeadLetterExchange, q.HasDeadLetterExchange, q.DeadLetterSource = s.dlx, s.hasDLX, s.dlxSource
	q.DeadLetterRoutingKey = s.dlrk
	q.MessageTTL, q.MaxLength, q.Overflow = s.ttl, s.maxLength, s.overflow
	if q.Type == TypeQuorum {
		q.DeliveryLimit = rules.quorumLimit(w.DeliveryLimit, args, policy)
		q.DeadLetterAsked = s.strategy
		if s.hasDLX {
			q.DeadLetterStrategy = rabbitmodel.StrategyAtMostOnce
			// rabbit_quorum_queue:dlh: at-least-once needs overflow reject-publish; with drop-head (the
			// default) RabbitMQ logs a warning and dead-letters at most once.
			if s.strategy == rabbitmodel.StrategyAtLeastOnce && s.overflow == "reject-publish" {
				q.DeadLetterStrategy = rabbitmodel.StrategyAtLeastOnce
			}
		}
	}
	q.SingleActiveConsumer = s.sac
	q.IsDeadLetterQueue = b.isDLQName(q.Name)
	return q
}

type settings struct {
	dlx, dlrk, dlxSource string
	strategy             string // dead-letter-strategy asked for (quorum queues)
	hasDLX               bool
	ttl                  *int64
	maxLength            *int64
	overflow             string
	sac                  bool
}

// effectiveSettings resolves queue arguments against the policy definition as RabbitMQ 3.10 does
// (rabbit_amqqueue_process:process_args_policy for classic queues,
// rabbit_quorum_queue:ra_machine_config and dlx_mfa for quorum queues): see Queue.
func effectiveSettings(typ string, args, policy map[string]any) settings {
	var s settings
	str := func(m map[string]any, k string) (string, bool) {
		v, ok := m[k]
		if !ok {
			return "", false
		}
		t, ok := v.(string)
		return t, ok
	}
	if typ != TypeStream {
		if v, ok := str(args, "x-dead-letter-exchange"); ok {
			s.dlx, s.hasDLX, s.dlxSource = v, true, SourceArgument
		} else if v, ok := str(policy, "dead-letter-exchange"); ok {
			s.dlx, s.hasDLX, s.dlxSource = v, true, SourcePolicy
		}
		if v, ok := str(args, "x-dead-letter-routing-key"); ok {
			s.dlrk = v
		} else if v, ok := str(policy, "dead-letter-routing-key"); ok {
			s.dlrk = v
		}
		s.ttl = minOf(intArg(args, "x-message-ttl"), intArg(policy, "message-ttl"))
		// The argument wins (rabbit_quorum_queue:dead_letter_handler, queue_arg_has_precedence).
		if v, ok := str(args, "x-dead-letter-strategy"); ok {
			s.strategy = v
		} else if v, ok := str(policy, "dead-letter-strategy"); ok {
			s.strategy = v
		}
	}
	s.maxLength = minOf(intArg(args, "x-max-length"), intArg(policy, "max-length"))
	argOverflow, argOK := str(args, "x-overflow")
	polOverflow, polOK := str(policy, "overflow")
	switch {
	case argOK && polOK && typ == TypeQuorum:
		s.overflow = polOverflow
	case argOK:
		s.overflow = argOverflow
	case polOK:
		s.overflow = polOverflow
	}
	if v, ok := args["x-single-active-consumer"].(bool); ok {
		s.sac = v
	}
	return s
}

// intArg reads a non-negative integer setting; JSON numbers, integer types and decimal strings are
// accepted, anything else (a negative number too) is treated as absent.
func intArg(m map[string]any, k string) *int64 {
	if n := signedArg(m, k); n != nil && *n >= 0 {
		return n
	}
	return nil
}

// signedArg reads an integer setting that may be negative (a delivery limit of -1 means
// unlimited); what is not an integer is treated as absent.
func signedArg(m map[string]any, k string) *int64 {
	v, ok := m[k]
	if !ok {
		return nil
	}
	var n int64
	switch t := v.(type) {
	case json.Number:
		i, err := t.Int64()
		if err != nil {
			f, ferr := t.Float64()
			if ferr != nil || f != math.Trunc(f) || f > math.MaxInt64 || f < math.MinInt64 {
				return nil
			}
			i = int64(f)
		}
		n = i
	case float64:
		if t != math.Trunc(t) || t > math.MaxInt64 || t < math.MinInt64 {
			return nil
		}
		n = int64(t)
	case int:
		n = int64(t)
	case int64:
		n = t
	case int32:
		n = int64(t)
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
		if err != nil {
			return nil
		}
		n = i
	default:
		return nil
	}
	return &n
}

func minOf(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case *b < *a:
		return b
	}
	return a
}

// rawMap decodes a JSON object. ok is false when the field was absent (or null); an empty array
// (an empty Erlang proplist) is an empty map.
func rawMap(raw json.RawMessage) (map[string]any, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, false
	}
	if raw[0] != '{' {
		return map[string]any{}, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return map[string]any{}, true
	}
	return m, true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// policyBook holds the policies and operator policies of every vhost, by name.
type policyBook struct {
	policies  map[QueueRef]map[string]any // QueueRef{vhost, policy name}
	operators map[QueueRef]map[string]any
}

// fetchPolicies lists policies and operator policies (two calls), for brokers that do not report
// a queue's effective_policy_definition.
func (b *Broker) fetchPolicies(ctx context.Context) (*policyBook, error) {
	ps, err := call(ctx, b.rh.ListPolicies)
	if err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	opPolicies, err := call(ctx, b.rh.ListOperatorPolicies)
	if err != nil {
		return nil, fmt.Errorf("list operator policies: %w", err)
	}
	book := &policyBook{policies: map[QueueRef]map[string]any{}, operators: map[QueueRef]map[string]any{}}
	for _, p := range ps {
		book.policies[QueueRef{Vhost: p.Vhost, Name: p.Name}] = normalize(p.Definition)
	}
	for _, p := range opPolicies {
		book.operators[QueueRef{Vhost: p.Vhost, Name: p.Name}] = normalize(p.Definition)
	}
	return book, nil
}

// normalize turns rabbit-hole's float64 numbers into json.Number like the direct calls produce.
func normalize(def rabbithole.PolicyDefinition) map[string]any {
	out := make(map[string]any, len(def))
	for k, v := range def {
		if f, ok := v.(float64); ok {
			v = json.Number(strconv.FormatFloat(f, 'f', -1, 64))
		}
		out[k] = v
	}
	return out
}

// effective merges a policy and an operator policy as RabbitMQ does for the keys an operator
// policy may set: for the numeric limits the smaller value wins; other keys come from the policy.
func (p *policyBook) effective(vhost, policy, operator string) map[string]any {
	out := map[string]any{}
	for k, v := range p.policies[QueueRef{Vhost: vhost, Name: policy}] {
		out[k] = v
	}
	for k, v := range p.operators[QueueRef{Vhost: vhost, Name: operator}] {
		cur, ok := out[k]
		if !ok {
			out[k] = v
			continue
		}
		switch k {
		case "expires", "message-ttl", "max-length", "max-length-bytes", "delivery-limit", "max-in-memory-length", "max-in-memory-bytes":
			if m := minOf(intArg(map[string]any{k: cur}, k), intArg(map[string]any{k: v}, k)); m != nil {
				out[k] = json.Number(strconv.FormatInt(*m, 10))
			}
		}
	}
	return out
}
