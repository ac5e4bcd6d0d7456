package replay

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/foureyes"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/source"
)

// KafkaCluster is what replay needs of a cluster; *kafka.Cluster implements it (cmd/console
// checks at compile time).
type KafkaCluster interface {
	Name() string
	Partitions(ctx context.Context, topic string) ([]kafkamodel.PartitionRange, error)
	TopicID(ctx context.Context, topic string) (string, error)
	Scan(ctx context.Context, topic string, partition int32, from, to int64, fn func(kafkamodel.Record) error) error
	NewReader(topic string, partition int32) kafkamodel.PartitionReader
	Produce(ctx context.Context, records []kafkamodel.Outgoing) []error
	// KeyPartition is the partition the producer's default partitioner picks for key among n
	// partitions; -1 for a nil key (any partition) or no partitions.
	KeyPartition(topic string, key []byte, n int) int32
}

// OutboxTable is what replay needs of an outbox; *outbox.Outbox implements it.
type OutboxTable interface {
	Name() string
	Events(ctx context.Context, ids []int64) ([]outbox.Event, error)
	List(ctx context.Context, f outbox.Filter) (outbox.Page, error)
	// RequeueEvents requeues the rows of ids that still hold eventIDs (one each), under the rows'
	// locks: a row id is reused after the table is truncated with RESTART IDENTITY or recreated.
	RequeueEvents(ctx context.Context, ids []int64, eventIDs []string, resetAttempts bool) ([]int64, error)
}

// Inbox is one consumer's idempotency records; *inbox.Inbox implements it.
type Inbox interface {
	Consumer() string
	Verdicts(ctx context.Context, ids []string) (map[string]inbox.Verdict, error)
}

// GroupsByTopic lists, per topic, the consumer groups reading it (from the lag snapshot), for the
// plan's warning that a replay to the original topic reaches them all.
type GroupsByTopic func(ctx context.Context, cluster string) map[string][]string

// Auditor appends to the audit log; *store.Store implements it. RecordIntent writes the intent
// of a change (outcome "started") before it is made and returns its id; errors are
// ops.ErrUnavailable.
type Auditor interface {
	RecordAudit(ctx context.Context, e audit.Entry) error
	RecordIntent(ctx context.Context, e audit.Entry) (int64, error)
}

// Options builds an Engine. Store is required; the maps may be empty.
type Options struct {
	Store     Store
	Kafka     []KafkaCluster
	Rabbit    []RabbitBroker
	Outboxes  []OutboxTable
	Inboxes   []Inbox        // one per consumer with an inbox
	Consumers []ops.Consumer // how dead letters map to consumers
	// OutboxRelays are the outboxes' relay destinations (outboxes[].relay_to) by outbox name: the
	// consumer reading there guards an outbox replay. An outbox without one is unguarded.
	OutboxRelays map[string]OutboxRelay
	// MessageIDs are the message id rules (message_id): where an edit's new id is written.
	MessageIDs    ops.MessageIDRules
	Replay        Settings
	GroupsByTopic GroupsByTopic // optional
	// ShownRabbit, when set, is what everyone may see of a RabbitMQ dead letter (ops/redact's
	// masking pass, as its pages show it): a plan's error groups are read from it, so that a group
	// quoting masked content — an exception message naming a masked payload value — is planned,
	// stored and shown masked. Nil groups by the message as it is.
	ShownRabbit func(rabbitmodel.Message) rabbitmodel.Message
	// Moves is the two-person rule's ledger of what people moved per source (ops/store): with it,
	// replay.four_eyes counts what one person moved from a source within its window, not one job
	// at a time. Nil counts each job alone.
	Moves  foureyes.Moves
	Audit  Auditor // optional in tests
	Logger *slog.Logger
	// Owner names this replica in job leases; default host-pid-random.
	Owner string
	// Lease is how long a claimed job is held without renewal; default 30s.
	Lease time.Duration
	// Poll is how often an idle worker looks for jobs; default 1s.
	Poll time.Duration
	// RestartPoll is how often WatchRestarts asks the RabbitMQ brokers how long their nodes have
	// been up; default 15s.
	RestartPoll time.Duration
}

// Engine plans and runs replays.
type Engine struct {
	o       Options
	kafka   map[string]KafkaCluster
	rabbit  map[string]RabbitBroker
	outbox  map[string]OutboxTable
	inboxes map[string]Inbox
	headers headerRewriter
	wake    chan struct{}
	aud     *audit.Writer // o.Audit with the one audit policy
	rule    foureyes.Rule // replay.four_eyes over o.Moves
	plans   plannings     // the plans this replica is making (planner.go)
}

// New validates the options and builds the engine.
func New(o Options) (*Engine, error) {
	if o.Store == nil {
		return nil, errors.New("replay: Store is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Owner == "" {
		o.Owner = "replica-" + randomID(4)
	}
	if o.Lease == 0 {
		o.Lease = 30 * time.Second
	}
	if o.Poll == 0 {
		o.Poll = time.Second
	}
	if o.RestartPoll == 0 {
		o.RestartPoll = 15 * time.Second
	}
	if o.Replay.MaxReplaysPerMessage == 0 {
		o.Replay.MaxReplaysPerMessage = 3
	}
	if o.Replay.DefaultRatePerSecond == 0 {
		o.Replay.DefaultRatePerSecond = 200
	}
	if o.Replay.StripHeaders == nil {
		o.Replay.StripHeaders = DefaultStripHeaders
	}
	e := &Engine{o: o, kafka: map[string]KafkaCluster{}, rabbit: map[string]RabbitBroker{}, outbox: map[string]OutboxTable{},
		inboxes: map[string]Inbox{}, wake: make(chan struct{}, 1), headers: newHeaderRewriter(o.Replay.StripHeaders),
		aud: audit.New(o.Audit, o.Logger)}
	e.rule = foureyes.Rule{Settings: o.Replay.FourEyes, Moves: o.Moves}
	for _, k := range o.Kafka {
		e.kafka[k.Name()] = k
	}
	for _, r := range o.Rabbit {
		e.rabbit[r.Name()] = r
	}
	for _, t := range o.Outboxes {
		e.outbox[t.Name()] = t
	}
	for _, in := range o.Inboxes {
		e.inboxes[in.Consumer()] = in
	}
	return e, nil
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// checkSelection validates a selection before anything is read, completing src (the action's
// default, a redirect's defaults, an edit's fresh id). Errors: ops.ErrInvalid, ops.ErrNotFound,
// ops.ErrForbidden (a redirect the config does not allow).
func (e *Engine) checkSelection(src *Source, f Filter) error {
	if _, err := e.kindOf(src.Kind); err != nil {
		return err
	}
	for name, v := range map[string]string{"source.cluster": src.Cluster, "source.topic": src.Topic, "source.broker": src.Broker,
		"source.vhost": src.Vhost, "source.queue": src.Queue, "source.outbox": src.Outbox, "source.status": src.Status,
		"source.event_type": src.EventType, "source.aggregate_id": src.AggregateID, "filter.exception_type": f.ExceptionType,
		"filter.reason": f.Reason, "filter.original_topic": f.OriginalTopic} {
		if unusable(v) {
			return invalid(name, "holds a NUL character or bytes that are not UTF-8")
		}
	}
	if f.CEL != "" && src.Kind == source.Outbox {
		return invalid("filter.cel", "applies to kafka and rabbitmq sources")
	}
	switch {
	case src.Action == ActionReplay:
		src.Action = ""
	case src.Action == ActionDiscard && src.Kind == source.Kafka:
		return invalid("action", "a Kafka dead letter cannot be discarded (a topic's records are never deleted): resolve or ignore it instead")
	case src.Action == ActionDiscard && src.Kind != source.RabbitMQ:
		return invalid("action", "discard applies to RabbitMQ dead-letter queues")
	case src.Action != "" && src.Action != ActionDiscard:
		return invalid("action", fmt.Sprintf("%q is not replay or discard", src.Action))
	}
	if src.Destination != nil {
		if err := e.allowRedirect(src); err != nil {
			return err
		}
	}
	if src.Edit != nil {
		ed := src.Edit
		switch {
		case src.Kind != source.Kafka && src.Kind != source.RabbitMQ:
			return invalid("edit", "edit and retry applies to one Kafka dead letter or one message of a RabbitMQ dead-letter queue")
		case src.discards():
			return invalid("edit", "a discard publishes nothing to edit")
		case src.Kind == source.Kafka && len(src.Records) != 1:
			return invalid("source.records", "edit and retry changes one message: name exactly one record")
		case src.Kind == source.RabbitMQ && len(f.MessageIDs) != 1:
			return invalid("filter.message_ids", "edit and retry changes one message: name exactly one message id")
		case ed.Value == nil && len(ed.SetHeaders) == 0 && len(ed.DropHeaders) == 0 && !ed.NewMessageID:
			return invalid("edit", "empty: change the value, set or drop a header, or ask for a new message id")
		case ed.NewMessageID && src.Kind == source.Kafka && len(e.o.MessageIDs.Headers) == 0:
			return invalid("edit.new_message_id", "message_id.headers is empty, so there is no header to carry a new id where "+
				"the message id rules read it first; configure one (e.g. messageId) or keep the id")
		}
		ed.Diff, ed.FreshID = nil, "" // the planner says what changed, and draws the new id once
		if ed.NewMessageID {
			ed.FreshID = newMessageID()
		}
	}
	for _, id := range f.MessageIDs {
		if unusable(id) {
			return invalid("filter.message_ids", "an id holds a NUL character or bytes that are not UTF-8")
		}
	}
	return nil
}

// build reads a checked selection into plan (its ID, actor, source and filter set) and stores it
// ready; progress is told every chunk. A plan cancelled meanwhile ends with ops.ErrConflict.
func (e *Engine) build(ctx context.Context, plan *Plan, progress func(planned int, counts map[Action]int)) error {
	src, f, actor := plan.Source, plan.Filter, plan.Actor
	k, err := e.kindOf(src.Kind)
	if err != nil {
		return err
	}
	matcher := f.withIDSet()
	read := func(ctx context.Context, emit func(Item) error) error { return k.plan(ctx, &src, matcher, emit) }
	plan.Counts, plan.ErrorGroups = map[Action]int{}, map[string]map[Action]int{}
	warn := newWarningCounter(ctx, e, src)
	w, err := e.o.Store.BeginPlan(ctx, plan.ID)
	if err != nil {
		return err
	}
	defer w.Rollback(ctx)
	b := &planBuilder{e: e, plan: plan, w: w, warn: warn, routes: newRabbitRoutes(e, src), progress: progress}
	if err := b.run(ctx, read); err != nil {
		return err
	}
	plan.Source = src // with what the read recorded (topic id, span)
	if plan.Total == 0 {
		return &ops.Error{Kind: ops.ErrInvalid, Message: "the selection holds no messages" + filterHint(f)}
	}
	if src.Edit != nil && plan.Total != 1 {
		return invalid("filter.message_ids", fmt.Sprintf("the selection holds %d messages with that id; edit and retry changes exactly one",
			plan.Total))
	}
	plan.Warnings = b.warnings()
	if ed := src.Edit; ed != nil && ed.Diff != nil {
		plan.Warnings = append(plan.Warnings, editWarning(*ed.Diff))
	}
	groups := map[string]map[string]int{}
	for g, counts := range plan.ErrorGroups {
		groups[g] = actionNames(counts)
	}
	if err := w.Commit(ctx, StoredPlan{ID: plan.ID, Actor: actor, Source: mustJSON(src), Filter: mustJSON(f),
		Total: plan.Total, Actions: actionNames(plan.Counts), Warnings: plan.Warnings, ErrorGroups: groups}); err != nil {
		return err
	}
	plan.State, plan.Planned = PlanReady, plan.Total
	e.audit(ctx, audit.Entry{Actor: actor, Action: "replay.plan", Target: "replay-plan/" + plan.ID,
		Count: new(int64(plan.Total)), Outcome: audit.OutcomeOK,
		Detail: map[string]any{"source": src, "filter": f, "actions": actionNames(plan.Counts)}})
	return nil
}

// actionNames keys counts by the actions' names, as stored.
func actionNames(counts map[Action]int) map[string]int {
	out := make(map[string]int, len(counts))
	for a, n := range counts {
		out[string(a)] = n
	}
	return out
}

func filterHint(f Filter) string {
	if f.CEL != "" || f.ExceptionType != "" || f.Reason != "" || f.OriginalTopic != "" || len(f.MessageIDs) > 0 || !f.Since.IsZero() || !f.Until.IsZero() {
		return " matching the filter"
	}
	return ""
}

// inboxVerdicts asks each consumer's inbox about its items. An unreachable inbox yields no
// verdicts (Unknown) for a plan, which says so rather than failing; for a run (strict) it is an
// error naming the consumer: a job never publishes what it could not check.
func (e *Engine) inboxVerdicts(ctx context.Context, items []Item, strict bool) (map[string]map[string]inbox.Verdict, error) {
	byConsumer := map[string][]string{}
	for _, it := range items {
		if it.Consumer != "" && it.MessageID != "" {
			byConsumer[it.Consumer] = append(byConsumer[it.Consumer], it.MessageID)
		}
	}
	out := map[string]map[string]inbox.Verdict{}
	for consumer, ids := range byConsumer {
		in, ok := e.inboxes[consumer]
		if !ok {
			continue
		}
		v, err := in.Verdicts(ctx, ids)
		if err != nil {
			if strict {
				return nil, fmt.Errorf("the inbox of consumer %s cannot be read, so whether it processed these messages is unknown: %w",
					consumer, err)
			}
			e.o.Logger.Warn("inbox unreachable; verdicts unknown", "consumer", consumer, "err", err)
			continue
		}
		out[consumer] = v
	}
	return out, nil
}

// LoadPlan reads a stored plan with its first items.
func (e *Engine) LoadPlan(ctx context.Context, id string) (Plan, error) {
	sp, err := e.o.Store.Plan(ctx, id)
	if err != nil {
		return Plan{}, err
	}
	sp = e.staleFailed(ctx, sp)
	p := Plan{ID: sp.ID, CreatedAt: sp.CreatedAt, Actor: sp.Actor, Total: sp.Total, Counts: map[Action]int{}, Warnings: sp.Warnings,
		ErrorGroups: map[string]map[Action]int{}, State: cmp.Or(sp.State, PlanReady), Planned: sp.Planned, Estimate: sp.Estimate,
		Error: sp.Error, FinishedAt: sp.FinishedAt}
	_ = json.Unmarshal(sp.Source, &p.Source)
	_ = json.Unmarshal(sp.Filter, &p.Filter)
	for a, n := range sp.Actions {
		p.Counts[Action(a)] = n
	}
	for g, counts := range sp.ErrorGroups {
		p.ErrorGroups[g] = map[Action]int{}
		for a, n := range counts {
			p.ErrorGroups[g][Action(a)] = n
		}
	}
	if p.State != PlanReady {
		return p, nil // its counts so far; its items are shown once they are all in
	}
	rows, err := e.o.Store.PlanItems(ctx, id, 0, MaxPlanItemsShown)
	if err != nil {
		return Plan{}, err
	}
	dec := newItemDecoder()
	for _, r := range rows {
		p.Items = append(p.Items, dec.item(r))
	}
	return p, nil
}

// itemDecoder turns stored plan items back into items. A plan's destinations repeat (one topic or
// exchange for thousands of messages), so each distinct one is decoded once.
type itemDecoder struct{ dest map[string]Destination }

func newItemDecoder() *itemDecoder { return &itemDecoder{dest: map[string]Destination{}} }

func (d *itemDecoder) item(r StoredItem) Item {
	it := Item{Seq: r.Seq, Locator: r.Locator, MessageID: r.MessageID, Consumer: r.Consumer, Inbox: inbox.Verdict(r.Inbox),
		Action: Action(r.Action), ErrorGroup: r.ErrorGroup, ReplayCount: r.ReplayCount, Partition: r.Partition, Position: r.Position,
		Note: r.Note}
	dest, ok := d.dest[string(r.Destination)]
	if !ok {
		_ = json.Unmarshal(r.Destination, &dest)
		d.dest[string(r.Destination)] = dest
	}
	it.Destination = dest
	return it
}

// consumerForGroup maps a Kafka group to the configured consumer that owns it.
func (e *Engine) consumerForGroup(cluster, group string) string {
	for _, c := range e.o.Consumers {
		if c.Kafka != nil && c.Kafka.Cluster == cluster && c.Kafka.Group == group {
			return c.Name
		}
	}
	return ""
}

// consumerForTopic finds the one configured consumer reading a topic (the DLT's owner when the
// record names no group); "" when none or several do.
func (e *Engine) consumerForTopic(cluster, topic string) string {
	found := ""
	for _, c := range e.o.Consumers {
		if c.Kafka != nil && c.Kafka.Cluster == cluster && slices.Contains(c.Kafka.Topics, topic) {
			if found != "" {
				return ""
			}
			found = c.Name
		}
	}
	return found
}

// consumerForOutbox finds the configured consumer reading where an outbox's relay publishes
// (outboxes[].relay_to); "" when the destination is not configured or no single consumer reads it.
func (e *Engine) consumerForOutbox(name string) string {
	r, ok := e.o.OutboxRelays[name]
	switch {
	case !ok:
		return ""
	case r.Cluster != "":
		return e.consumerForTopic(r.Cluster, r.Topic)
	default:
		return e.consumerForQueue(r.Broker, cmp.Or(r.Vhost, "/"), r.Queue)
	}
}

// consumerForQueue maps a RabbitMQ queue to the configured consumer reading it.
func (e *Engine) consumerForQueue(broker, vhost, queue string) string {
	for _, c := range e.o.Consumers {
		if r := c.RabbitMQ; r != nil && r.Broker == broker && r.Queue == queue && (r.Vhost == vhost || (r.Vhost == "" && vhost == "/")) {
			return c.Name
		}
	}
	return ""
}

func parseCount(b []byte) int {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// allowRedirect checks a plan's redirect: the same kind of destination as the source, on its
// cluster (or broker and vhost), matching one of replay.allowed_destinations (ops.ErrForbidden
// otherwise, naming the destination).
func (e *Engine) allowRedirect(src *Source) error {
	d := src.Destination
	switch {
	case src.discards():
		return invalid("destination", "a discard publishes nothing: give a destination to a replay")
	case d.Kind != src.Kind || (d.Kind != source.Kafka && d.Kind != source.RabbitMQ):
		return invalid("destination.kind", fmt.Sprintf("a %s source is redirected to a %s destination", src.Kind, src.Kind))
	case d.Kind == source.Kafka:
		if d.Cluster == "" {
			d.Cluster = src.Cluster
		}
		if d.Cluster != src.Cluster {
			return invalid("destination.cluster", "a redirect stays on the source's cluster ("+src.Cluster+")")
		}
		if !validTopic(d.Topic) {
			return invalid("destination.topic", "required: a valid Kafka topic name")
		}
	case d.Kind == source.RabbitMQ:
		if d.Broker == "" {
			d.Broker = src.Broker
		}
		if d.Vhost == "" {
			d.Vhost = src.Vhost
		}
		if d.Vhost == "" {
			d.Vhost = "/"
		}
		vhost := src.Vhost
		if vhost == "" {
			vhost = "/"
		}
		if d.Broker != src.Broker || d.Vhost != vhost {
			return invalid("destination", "a redirect stays on the source's broker and vhost ("+src.Broker+", "+vhost+")")
		}
		if unusable(d.Exchange) || unusable(d.RoutingKey) {
			return invalid("destination", "the exchange or routing key holds a NUL character or bytes that are not UTF-8")
		}
	}
	for _, a := range e.o.Replay.AllowedDestinations {
		if a.Kind == d.Kind && globs(a.Cluster, d.Cluster) && globs(a.Topic, d.Topic) && globs(a.Broker, d.Broker) &&
			globs(a.Vhost, d.Vhost) && globs(a.Exchange, d.Exchange) && globs(a.RoutingKey, d.RoutingKey) {
			return nil
		}
	}
	return ops.Forbidden("the destination %s is not one of replay.allowed_destinations; a replay goes back where each message came from unless the config allows a redirect there",
		redirectName(*d))
}

// redirectName is a redirect's destination for people.
func redirectName(d Destination) string {
	if d.Kind == source.Kafka {
		return fmt.Sprintf("kafka %s topic %s", d.Cluster, d.Topic)
	}
	ex := d.Exchange
	if ex == "" {
		ex = "(default exchange)"
	}
	return fmt.Sprintf("rabbitmq %s%s exchange %s routing key %q", d.Broker, vhostLabel(d.Vhost), ex, d.RoutingKey)
}

// globs reports whether value matches pattern (path.Match); an empty pattern matches anything.
func globs(pattern, value string) bool {
	if pattern == "" {
		return true
	}
	ok, _ := path.Match(pattern, value)
	return ok
}

// editWarning says what an edit and retry publishes instead of what died.
func editWarning(d EditDiff) string {
	var parts []string
	if d.ValueAfter != "" || d.ValueBefore != "" {
		parts = append(parts, "the value")
	}
	if d.Encoding != "" {
		parts[len(parts)-1] += " (the edited JSON is re-encoded as " + d.Encoding + ", as the original was written)"
	}
	if n := len(d.Headers); n > 0 {
		parts = append(parts, fmt.Sprintf("%d header(s)", n))
	}
	if id := d.MessageID; id != nil {
		parts = append(parts, "the message id")
		return "edit and retry: " + strings.Join(parts, " and ") + " change; a NEW message id " + id[1] + " replaces " + id[0] +
			": the consumer's inbox will not recognise it as the same message, so nothing stops it being applied twice if the " +
			"original was processed (the copy carries " + HeaderOriginalMessageID + "); only the edited copy is published, and " +
			"the job waits for a second person's approval when four-eyes is on"
	}
	return "edit and retry: " + strings.Join(parts, " and ") + " change; the message id stays, so the consumer's inbox still " +
		"guards it; only the edited copy is published, and the job waits for a second person's approval when four-eyes is on"
}

// newMessageID is a fresh message id for an edit that asks for one: a random (version 4) UUID,
// the shape message ids usually have.
func newMessageID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// idHeaderNames lists the headers a copy under a new message id rewrites to it: each header the
// message id rules name (any case) that the message has, in its own spelling, or the first
// rule's when it has none, so that the rules read the fresh id first. present looks a name up.
func idHeaderNames(rules []string, present func(name string) (string, bool)) []string {
	var out []string
	for _, n := range rules {
		if k, ok := present(n); ok {
			out = append(out, k)
		}
	}
	if len(out) == 0 && len(rules) > 0 {
		out = append(out, rules[0])
	}
	return out
}
