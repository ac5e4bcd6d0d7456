// Package trace answers the on-call question of the seed's section 十六 — "what happened to
// order-100's event?" — for one message, or for one aggregate's messages: was it written to the
// outbox, published by the relay, retried, dead-lettered, taken by which consumers' inboxes,
// replayed, and who did what to it.
//
// A trace fans out to every configured source at once (outboxes, Kafka clusters, RabbitMQ brokers,
// inboxes, the replay ledger, the audit log). Each lookup has a budget — records read and time —
// and every lookup answers with at least one step: what it found, or what it searched and what it
// did not ("orders: 3 of 6 partitions searched, time budget of 5s exceeded"). A source that is
// down answers with a step saying so; the others still answer.
//
// The sources are the small interfaces below; the existing ops adapters (ops/outbox, ops/kafka,
// ops/rabbit, ops/inbox, ops/store) implement them.
package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/search"
)

// Outbox is a service's outbox table; *outbox.Outbox implements it.
type Outbox interface {
	Name() string
	// Find reads the rows of these event ids and of the aggregate ("" for none), at most limit.
	// Errors wrap ops.ErrUnavailable.
	Find(ctx context.Context, eventIDs []string, aggregateID string, limit int) ([]outbox.Event, error)
	// Event reads one row with its payload (for Query.OutboxView). Errors: ops.ErrNotFound,
	// ops.ErrUnavailable.
	Event(ctx context.Context, id int64) (outbox.Event, error)
}

// KafkaCluster is a Kafka cluster; *kafka.Cluster implements it.
type KafkaCluster interface {
	Name() string
	search.KafkaSource
	// OffsetsAfter is, per partition, the first offset at or after at (the end when none).
	OffsetsAfter(ctx context.Context, topic string, at time.Time) (map[int32]int64, error)
	// DeadLetterTopics lists the topics matching dead_letter_topics (retry topics marked).
	// Errors wrap ops.ErrUnavailable.
	DeadLetterTopics(ctx context.Context) ([]kafkamodel.DLTopic, error)
	// OriginalTopicOf is the topic a dead-letter topic's name says it serves ("" when none).
	OriginalTopicOf(dlt string) string
	// KeyPartition is the partition Java's default partitioner (murmur2) picks for key among n
	// partitions of topic (-1 for a nil key or none): a trace by key reads only that one.
	KeyPartition(topic string, key []byte, n int) int32
}

// RabbitBroker is a RabbitMQ broker; *rabbit.Broker implements it. Its Scan browses safely: the
// queue is left as it was, and browses of one queue take turns (across replicas too).
type RabbitBroker interface {
	Name() string
	search.RabbitSource
	// Topology resolves the dead-letter and retry queues. Errors wrap ops.ErrUnavailable.
	Topology(ctx context.Context) (rabbitmodel.Topology, error)
}

// Inbox is a consumer's inbox table; *inbox.Inbox implements it.
type Inbox interface {
	Consumer() string
	// Rows reads the consumer's rows of these message ids. Errors wrap ops.ErrUnavailable.
	Rows(ctx context.Context, ids []string, limit int) ([]inbox.Row, error)
	// OtherRows reads the rows other consumers wrote for these ids in the same table, each naming
	// its consumer. Errors wrap ops.ErrUnavailable.
	OtherRows(ctx context.Context, ids []string, limit int) ([]inbox.Row, error)
}

// Ledger is the replay ledger; *store.Store implements it.
type Ledger interface {
	// ReplaysOf lists the ledger rows of these message ids with their jobs.
	ReplaysOf(ctx context.Context, ids []string, limit int) ([]replay.Traced, error)
}

// AuditLog is the audit log; *store.Store implements it.
type AuditLog interface {
	// AuditNaming lists entries since since whose target, reason or detail contains a needle, or
	// that changed one of rows (an outbox repair names its rows by id, not by event_id).
	AuditNaming(ctx context.Context, needles []string, rows []audit.RowRef, since time.Time, limit int) ([]audit.Entry, error)
	// AuditNamingMasked is AuditNaming searching no message content an entry records (an edit
	// and retry's values), for a reader who sees it masked.
	AuditNamingMasked(ctx context.Context, needles []string, rows []audit.RowRef, since time.Time, limit int) ([]audit.Entry, error)
}

// Budget bounds each lookup of a trace. Zero fields take the defaults.
type Budget struct {
	// Records is how many records (or messages) one lookup reads at most: one topic of a cluster,
	// or one broker's queues. Default search.DefaultMaxScan.
	Records int64
	// Time is how long one lookup reads. Default DefaultTime.
	Time time.Duration
	// Rows is how many rows one table look-up returns (outbox, inbox, ledger, audit). Default 100.
	Rows int
}

// Defaults of a Budget.
const (
	DefaultTime = 5 * time.Second
	DefaultRows = 100
	// AuditWindow is how far back the audit log is searched when the query gives no Since.
	AuditWindow = 30 * 24 * time.Hour
	// maxQueues bounds the dead-letter and retry queues of one broker that one trace browses.
	maxQueues = 50
)

// Options are the sources of a Tracer. Every field may be empty; a source that is not configured
// is not searched (and the verdict says nothing about it).
type Options struct {
	Outboxes  []Outbox
	Kafka     []KafkaCluster
	Rabbit    []RabbitBroker
	Inboxes   []Inbox
	Ledger    Ledger
	Audit     AuditLog
	Consumers []ops.Consumer     // who consumes which topic or queue, for the inbox steps
	IDs       ops.MessageIDRules // how a record's message id is found (message_id)
	Budget    Budget
	Logger    *slog.Logger // where unexpected source errors are logged; nil logs nothing
}

// Tracer runs traces over the configured sources; safe for concurrent use.
type Tracer struct {
	o Options
}

// New wires o, applying the budget's defaults.
func New(o Options) *Tracer {
	if o.Budget.Records <= 0 {
		o.Budget.Records = search.DefaultMaxScan
	}
	if o.Budget.Time <= 0 {
		o.Budget.Time = DefaultTime
	}
	if o.Budget.Rows <= 0 {
		o.Budget.Rows = DefaultRows
	}
	return &Tracer{o: o}
}

// Query is what to trace: one of the ids. Since and Until (nil: unbounded) narrow the
// Kafka records read to that time window and the audit entries to those since Since. A time is
// given or not, whatever its value: 0001-01-01 is a time (before any record), not "unbounded".
type Query struct {
	MessageID   string
	EventID     string
	AggregateID string
	TraceID     string
	// Any is an id of unknown kind (the navigation's search box): the outboxes decide — an
	// event_id is traced as a message, an aggregate_id as the aggregate, anything else as a
	// message id and a trace id at once.
	Any   string
	Since *time.Time
	Until *time.Time

	// KafkaView and RabbitView, when set, are what the reader may see of a record or a message
	// (content masked): a record matches on them, as a content search's filter does, and steps
	// are described from them. Nil (an admin who asked to reveal) matches and shows the original.
	KafkaView  func(kafkamodel.Record) kafkamodel.Record
	RabbitView func(rabbitmodel.Message) rabbitmodel.Message
	// OutboxView, when set, is what the reader may see of an outbox row read with its payload
	// (last_error masked where it repeats what the payload masks); a row's last_error is told
	// from it, and hidden when the payload cannot be read. Nil shows last_error as stored.
	OutboxView func(outbox.Event) outbox.Event
	// AuditContent searches what audit entries record of message content (an edit and retry's
	// values) too: only for a reader who may see it (no redaction, or an admin who revealed).
	// False searches targets, reasons and the rest of the detail, so that a guess at a masked
	// value is not confirmed by the audit log.
	AuditContent bool
	// Each, when set, is handed each lookup's steps as that lookup answers (one call at a time).
	Each func([]Step)
}

// MaxIDBytes bounds each id of a Query.
const MaxIDBytes = 512

// Validate says, in the user's words, what is wrong with q: ops.ErrInvalid.
func (q Query) Validate() error {
	if strings.TrimSpace(q.MessageID+q.EventID+q.AggregateID+q.TraceID+q.Any) == "" {
		return ops.Invalid("message_id", "give a message_id, event_id, aggregate_id or trace_id to trace")
	}
	// One id is traced: each kind is looked up its own way (an aggregate's records by key, a
	// message's by id), and the verdict is about one subject. Two given together were traced as
	// the first alone, silently; they are refused, naming both.
	var given []string
	for _, id := range []struct{ name, v string }{{"message_id", q.MessageID}, {"event_id", q.EventID},
		{"aggregate_id", q.AggregateID}, {"trace_id", q.TraceID}, {"q", q.Any}} {
		if len(id.v) > MaxIDBytes {
			return ops.Invalid(id.name, fmt.Sprintf("must be at most %d bytes", MaxIDBytes))
		}
		if strings.TrimSpace(id.v) != "" {
			given = append(given, id.name)
		}
	}
	if len(given) > 1 {
		return ops.Invalid(strings.Join(given, " and "), "give one of them: a trace follows one message_id, event_id, aggregate_id or trace_id")
	}
	if q.Since != nil && q.Until != nil && q.Until.Before(*q.Since) {
		return ops.Invalid("until", "must not be before since")
	}
	return nil
}

// Subject names what is traced, for the verdict ("message e-1", "aggregate order-100").
func (q Query) Subject() string {
	switch {
	case q.Any != "":
		return q.Any
	case q.MessageID != "":
		return "message " + q.MessageID
	case q.EventID != "":
		return "event " + q.EventID
	case q.AggregateID != "":
		return "aggregate " + q.AggregateID
	}
	return "trace " + q.TraceID
}

// ids are the message ids asked for (message_id and event_id: an outbox's event_id is the
// message's id once published).
func (q Query) ids() []string {
	var out []string
	for _, v := range []string{q.MessageID, q.EventID} {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Kinds of step: the system a step is about.
const (
	KindOutbox   = "outbox"
	KindKafka    = "kafka"
	KindRabbitMQ = "rabbitmq"
	KindInbox    = "inbox"
	KindReplay   = "replay"
	KindAudit    = "audit"
)

// Step is one place searched: what was found there (Found, At, Place, Detail), or what was
// searched and what was not (Found false, Detail).
type Step struct {
	Kind   string
	Source string // "outbox orders", "kafka main/orders.DLT", "rabbitmq main/orders.dlq", "inbox billing-service"
	Found  bool
	At     *time.Time // when it happened there: created, produced, dead-lettered, processed, …
	Place  string     // where: "orders/2 @ 811", "row 17", "position 3 (vhost /)"
	Detail string
	// Down is true when the source could not be searched at all (unreachable, refused).
	Down bool
	// Ref is what the step's link is made of (the HTTP layer builds the URL).
	Ref Ref

	fact fact // what the verdict says of it
}

// Ref locates a step's thing in the console. Zero fields do not apply.
type Ref struct {
	Outbox  string
	EventID int64 // the outbox row's id
	Cluster string
	Topic   string
	// Partition and Offset locate a record; Offset −1 means none.
	Partition int32
	Offset    int64
	Broker    string
	Vhost     string
	Queue     string
	JobID     string
	AuditID   int64
}

// fact is a step's meaning for the verdict.
type fact struct {
	role      string // original, retry, dead_letter (Kafka); dlq, retry (RabbitMQ)
	status    string // outbox status; inbox verdict; ledger outcome
	stuck     bool
	by        string // consumer (or group) that dead-lettered it
	exception string // short exception type, or RabbitMQ's reason
	messageID string // the message id the step found (for the inbox look-up)
	key       string
	topic     string
	partition int32
	offset    int64
	sentAt    *time.Time
	createdAt time.Time
	partial   string // what a not-found lookup did not search
	locator   string // the dead letter a ledger row names (replay.Traced.Locator)
	note      string // a ledger row's detail (why it was skipped)
}

// Result is a whole trace.
type Result struct {
	Verdict string
	Steps   []Step // ordered: found steps by time, then what was searched without finding it
}

// Trace runs q over every configured source concurrently and returns every step with the
// verdict. Each source's failure is a step (Down); only an invalid q is an error (ops.ErrInvalid).
func (t *Tracer) Trace(ctx context.Context, q Query) (Result, error) {
	if err := q.Validate(); err != nil {
		return Result{}, err
	}
	q.MessageID, q.EventID = strings.TrimSpace(q.MessageID), strings.TrimSpace(q.EventID)
	q.AggregateID, q.TraceID = strings.TrimSpace(q.AggregateID), strings.TrimSpace(q.TraceID)
	if id := strings.TrimSpace(q.Any); id != "" && q.MessageID+q.EventID+q.AggregateID+q.TraceID == "" {
		q = t.resolve(ctx, q, id)
	}
	q.Any = ""
	r := &run{t: t, q: q, outboxDone: make(chan struct{}), brokersDone: make(chan struct{})}
	r.run(ctx)
	steps := r.steps
	sortSteps(steps)
	return Result{Verdict: verdict(q, steps, t.o.Consumers), Steps: steps}, nil
}

// resolve decides what an id of unknown kind is by the outboxes' rows (see Query.Any).
func (t *Tracer) resolve(ctx context.Context, q Query, id string) Query {
	ctx, cancel := context.WithTimeout(ctx, min(t.o.Budget.Time, outboxTime))
	defer cancel()
	aggregate := false
	for _, o := range t.o.Outboxes {
		events, err := o.Find(ctx, []string{id}, id, 2)
		if err != nil {
			continue // the trace's own outbox step says the outbox is down
		}
		for _, e := range events {
			if e.EventID == id {
				q.MessageID = id
				return q
			}
			aggregate = aggregate || e.AggregateID == id
		}
	}
	if aggregate {
		q.AggregateID = id
		return q
	}
	q.MessageID, q.TraceID = id, id
	return q
}

// outboxTime bounds the outbox look-ups, which the Kafka lookups wait for: an indexed read.
const outboxTime = 3 * time.Second

// run is one trace's shared state: the steps so far, and what earlier lookups learnt that later
// ones use (the outbox rows narrow the Kafka reads; found message ids feed the inboxes).
type run struct {
	t *Tracer
	q Query

	mu    sync.Mutex
	steps []Step

	outboxDone  chan struct{}
	events      []outbox.Event // the outbox rows found (read after outboxDone)
	rows        []audit.RowRef // the same rows as the audit log names them
	brokersDone chan struct{}
}

func (r *run) emit(steps []Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, steps...)
	if r.q.Each != nil {
		r.q.Each(steps)
	}
}

// foundIDs are the message ids the steps so far found (for an aggregate or a trace id, the ids
// its records carry).
func (r *run) foundIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.steps {
		if id := s.fact.messageID; s.Found && id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func (r *run) run(ctx context.Context) {
	var wg sync.WaitGroup
	var brokers sync.WaitGroup
	wg.Go(func() {
		defer close(r.outboxDone)
		r.events, r.rows = r.outboxes(ctx)
	})
	for _, k := range r.t.o.Kafka {
		brokers.Add(1)
		wg.Go(func() {
			defer brokers.Done()
			<-r.outboxDone // the rows say which partition and which time window to read
			r.kafka(ctx, k)
		})
	}
	for _, b := range r.t.o.Rabbit {
		brokers.Add(1)
		wg.Go(func() {
			defer brokers.Done()
			r.rabbit(ctx, b)
		})
	}
	wg.Go(func() {
		brokers.Wait()
		close(r.brokersDone)
	})
	wg.Go(func() { r.after(ctx, r.inboxes) })
	wg.Go(func() { r.after(ctx, r.replays) })
	wg.Go(func() { r.after(ctx, r.audit) })
	wg.Wait()
	r.ledgerNamed(ctx)
}

// after runs a lookup by message id once the ids are known: at once when the query names one;
// after the outbox (and the brokers, for a trace id) when they are found from the aggregate's rows
// or the records.
func (r *run) after(ctx context.Context, lookup func(ctx context.Context, ids []string)) {
	ids := r.q.ids()
	if len(ids) == 0 {
		<-r.outboxDone
		for _, e := range r.events {
			if !slices.Contains(ids, e.EventID) {
				ids = append(ids, e.EventID)
			}
		}
		if r.q.AggregateID == "" || len(ids) == 0 {
			<-r.brokersDone
			for _, id := range r.foundIDs() {
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
		}
	}
	lookup(ctx, ids)
}

// down is the step of a source that could not be searched.
func (r *run) down(kind, source string, err error) Step {
	return Step{Kind: kind, Source: source, Down: true, Detail: "down: could not be searched: " + r.t.errText(err), Ref: Ref{Offset: -1}}
}

// errText is what a person may read of a source's error: ops.Message's words (the adapters' kinded
// errors say what failed, never a driver's or broker's own text); the error itself is logged when
// it says more, and anything unkinded is named only as failed.
func (t *Tracer) errText(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within the time budget of " + t.o.Budget.Time.String()
	}
	msg := ops.Message(err)
	kinded := errors.Is(err, ops.ErrUnavailable) || errors.Is(err, ops.ErrNotFound) || errors.Is(err, ops.ErrInvalid) ||
		errors.Is(err, ops.ErrConflict) || errors.Is(err, ops.ErrForbidden)
	if msg != err.Error() && t.o.Logger != nil {
		t.o.Logger.Error("trace: source failed", "err", err)
	}
	if !kinded {
		return "failed (the console's log has the error)"
	}
	return msg
}

// sortSteps orders the timeline: found steps by time (those without one after them), then the
// places searched without a find, each group in the order of kinds.
func sortSteps(steps []Step) {
	rank := map[string]int{KindOutbox: 0, KindKafka: 1, KindRabbitMQ: 2, KindInbox: 3, KindReplay: 4, KindAudit: 5}
	sort.SliceStable(steps, func(i, j int) bool {
		a, b := steps[i], steps[j]
		if a.Found != b.Found {
			return a.Found
		}
		if a.Found {
			switch {
			case a.At != nil && b.At != nil && !a.At.Equal(*b.At):
				return a.At.Before(*b.At)
			case (a.At == nil) != (b.At == nil):
				return a.At != nil
			}
		}
		if rank[a.Kind] != rank[b.Kind] {
			return rank[a.Kind] < rank[b.Kind]
		}
		return a.Source < b.Source
	})
}

// seen is a matcher that judges a message on what the reader may see of it — view, when set: the
// query's KafkaView or RabbitView — as a content search does (its filter evaluates the view): a
// masked trace id, message id or body value does not match, so that a trace cannot confirm a
// hidden value. It returns the message as shown. The original is judged first, so that only a
// message that may match is copied and masked; a message the view alone would make match (an id
// equal to the mask's text) is not the traced one: a mask is not an id.
func seen[M any](is func(M) bool, view func(M) M) func(M) (M, bool) {
	return func(raw M) (M, bool) {
		if !is(raw) {
			return raw, false
		}
		if view == nil {
			return raw, true
		}
		shown := view(raw)
		return shown, is(shown)
	}
}

// unmasked is a message id as shown, "" when it is masked: it is then not looked up elsewhere.
func unmasked(id string) string {
	if id == redact.Redacted {
		return ""
	}
	return id
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
