// Package triage is what people do with dead letters besides replaying them: mark Kafka dead
// letters resolved or ignored (a DLT's records are never deleted, so their state lives in
// Redrive's store), and count what is still open so that a fixed incident stops being on fire.
package triage

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/search"
)

// Limits of one resolution request.
const (
	// MaxRecords bounds an explicit record list.
	MaxRecords = 10_000
	// MaxScan bounds the records a group or filter selection reads.
	MaxScan = 1_000_000
	// scanTimeout bounds that read.
	scanTimeout = 2 * time.Minute
	// maxReason bounds the reason, which goes to the audit log and the records.
	maxReason = 1000
)

// Cluster is what resolving reads of a Kafka cluster; *kafka.Cluster implements it.
type Cluster interface {
	Name() string
	search.KafkaSource
	// TopicID is the topic's ID as the broker says now ("" when it has none): a mark belongs to
	// one topic, not to the next one created under the same name. ErrNotFound, ErrUnavailable.
	TopicID(ctx context.Context, topic string) (string, error)
}

// Store keeps the resolutions and the audit log; *store.Store implements it. A topic's marks are
// written and read with its ID (Cluster.TopicID; Span.TopicID): a mark written under another ID
// is not read, the record is open.
type Store interface {
	SetResolutions(ctx context.Context, e audit.Entry, cluster, topic, topicID string, marks []Mark, state, reason string) (int64, error)
	Resolutions(ctx context.Context, cluster, topic, topicID string, keys []RecordKey) (map[RecordKey]Resolution, error)
	SettledDeadLetters(ctx context.Context, cluster string, spans []Span) (map[string]int64, error)
	SettledByErrorGroup(ctx context.Context, cluster, topic string, spans []Span) (map[GroupKey]int64, error)
	SettledStates
	// SetOutboxResolutions marks ids (deaths[i] the death ids[i] is marked for, outbox.Event.Death; nil
	// for none).
	SetOutboxResolutions(ctx context.Context, e audit.Entry, outbox string, ids []int64, deaths []string, state, reason string) (int64, error)
	OutboxResolutions(ctx context.Context, outbox string, ids []int64) (map[int64]Resolution, error)
	// SettledOutboxEvents lists the events marked resolved or ignored, each with the death its
	// mark is about ("" for any).
	SettledOutboxEvents(ctx context.Context, outbox string) (map[int64]string, error)
	ReopenRequeuedOutbox(ctx context.Context, actor, outbox string, ids []int64) (int64, error)
	AddNote(ctx context.Context, e audit.Entry, n Note) (Note, error)
	Notes(ctx context.Context, source string) ([]Note, error)
}

// Triage is the use cases of this package over the configured clusters.
type Triage struct {
	store    Store
	clusters map[string]Cluster
	outboxes map[string]OutboxTable
	brokers  map[string]bool // RabbitMQ brokers, for queue notes
}

// New wires the clusters (may be empty) and the store.
func New(st Store, clusters []Cluster) *Triage {
	t := &Triage{store: st, clusters: map[string]Cluster{}}
	for _, c := range clusters {
		t.clusters[c.Name()] = c
	}
	return t
}

// Selection is which records of a topic a resolution applies to: exactly one of Records,
// ErrorGroup and Filter.
type Selection struct {
	Records    []RecordKey
	ErrorGroup *ErrorGroupRef
	Filter     *Filter
}

// ErrorGroupRef names an error group: its exception type (and, when given, cause) as the actor
// sees them, or one of its records.
type ErrorGroupRef struct {
	// ExceptionType is the group's type, its class or its fingerprint (kafkamodel.DeadLetter.GroupType).
	ExceptionType  string
	ExceptionCause *string // nil: any cause
	// Of, when set, names the group by one of its records instead: the group (type and cause, as
	// the error groups page keys them) that record is in, which the request need not know. A page
	// offers a group whose key is masked this way (redact.Rules.ErrorGroup). ExceptionType is then
	// only what the audit row records.
	Of *RecordKey
	// Shown is a group's type and cause as the actor sees them (redact.Rules.GroupKey): the type
	// and cause asked are compared with it, so that resolving cannot confirm a guess of a masked
	// type. Nil: as they are.
	Shown func(typ, cause string) (string, string)
}

// Filter selects records by what a replay plan's filter may say: a CEL expression (ops/search)
// and the exact fields beside it.
type Filter struct {
	CEL           string
	ExceptionType string
	OriginalTopic string
	Since, Until  time.Time
	// View is what the actor may see of a record: a filter is evaluated on it, so masked content
	// cannot be guessed by filtering on it. Nil: the records as they are.
	View func(kafkamodel.Record) kafkamodel.Record
}

// Request is one resolution of a selection.
type Request struct {
	Cluster, Topic string
	Selection      Selection
	State, Reason  string
	Actor          access.Actor // the audit row's actor and role
}

// Result is what a resolution did.
type Result struct {
	Updated int64 // records whose state changed
	Matched int64 // records selected (some may have been in the state already)
	Scanned int64 // records read to find them
}

// Resolve puts the selected records into the state, audited (action kafka.resolve) before the
// change. Errors: ErrNotFound (cluster, topic), ErrInvalid (the request, in the user's words),
// ErrUnavailable (the cluster or the store), ErrConflict (records deleted under the read).
func (t *Triage) Resolve(ctx context.Context, r Request) (Result, error) {
	c, ok := t.clusters[r.Cluster]
	if !ok {
		return Result{}, ops.NotFound("kafka cluster %q is not configured", r.Cluster)
	}
	if err := checkState(r.State, r.Reason); err != nil {
		return Result{}, err
	}
	sel := r.Selection
	n := 0
	for _, set := range []bool{len(sel.Records) > 0, sel.ErrorGroup != nil, sel.Filter != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return Result{}, ops.Invalid("body", "give exactly one of records, error_group or filter")
	}
	// The topic's ID before its records are read and after: marks are written for the topic they
	// were read from, and a topic created again in between is refused rather than marked with
	// another's records.
	id, err := c.TopicID(ctx, r.Topic)
	if err != nil {
		return Result{}, err
	}
	detail := map[string]any{"cluster": r.Cluster, "topic": r.Topic, "state": r.State}
	if id != "" {
		detail["topic_id"] = id
	}
	var marks []Mark
	var res Result
	switch {
	case len(sel.Records) > 0:
		if len(sel.Records) > MaxRecords {
			return Result{}, ops.Invalid("records", fmt.Sprintf("at most %d per request; resolve an error group or a filter for more", MaxRecords))
		}
		detail["records"] = len(sel.Records)
		marks, res, err = readRecords(ctx, c, r.Topic, sel.Records)
	case sel.ErrorGroup != nil:
		g := sel.ErrorGroup
		eg := map[string]any{"exception_type": g.ExceptionType}
		if g.ExceptionCause != nil {
			eg["exception_cause"] = *g.ExceptionCause
		}
		detail["error_group"] = eg
		var in func(kafkamodel.Record) bool
		if g.Of != nil {
			eg["record"] = fmt.Sprintf("%d:%d", g.Of.Partition, g.Of.Offset)
			in, err = groupOfRecord(ctx, c, r.Topic, *g.Of)
		} else {
			in = inGroupShown(*g)
		}
		if err == nil {
			marks, res, err = scanSelect(ctx, c, r.Topic, nil, nil, in)
		}
	default:
		f := sel.Filter
		detail["filter"] = map[string]any{"cel": f.CEL, "exception_type": f.ExceptionType, "original_topic": f.OriginalTopic}
		var cel *search.Filter
		if f.CEL != "" {
			if cel, err = search.Compile(search.Kafka, f.CEL); err != nil {
				return Result{}, err
			}
			cel = cel.WithResolutions(StateLookup(ctx, t.store, r.Cluster, r.Topic, id))
		}
		if cel == nil && f.ExceptionType == "" && f.OriginalTopic == "" && f.Since.IsZero() && f.Until.IsZero() {
			return Result{}, ops.Invalid("filter", "empty: give cel, exception_type, original_topic, since or until (to resolve a whole topic, say so with cel: true)")
		}
		marks, res, err = scanSelect(ctx, c, r.Topic, cel, f.View, func(rec kafkamodel.Record) bool {
			dl := rec.DeadLetter
			var typ, orig string
			if dl != nil {
				typ, orig = dl.ExceptionType, dl.OriginalTopic
			}
			var stack string
			if dl != nil {
				stack = dl.Stacktrace
			}
			return ops.InErrorGroupTraced(typ, stack, f.ExceptionType) && (f.OriginalTopic == "" || orig == f.OriginalTopic) &&
				(f.Since.IsZero() || !rec.Timestamp.Before(f.Since)) && (f.Until.IsZero() || rec.Timestamp.Before(f.Until))
		})
	}
	if err != nil {
		return Result{}, err
	}
	if now, err := c.TopicID(ctx, r.Topic); err != nil {
		return Result{}, err
	} else if now != id {
		return Result{}, ops.Conflict("topic %s was deleted and created again while its records were read: nothing was marked; look at its records again", r.Topic)
	}
	detail["matched"] = res.Matched
	e := audit.WithClient(ctx, audit.Entry{Actor: r.Actor.Name, Role: r.Actor.Role.String(), Action: "kafka.resolve",
		Target: "kafka/" + r.Cluster + "/" + r.Topic, Reason: r.Reason, Detail: detail})
	res.Updated, err = t.store.SetResolutions(ctx, e, r.Cluster, r.Topic, id, marks, r.State, r.Reason)
	return res, err
}

// groupKeyOf is a record's error group as the error groups page keys it (kafkamodel.ErrorGroup:
// its GroupType and cause), cleaned as the marks keep them.
func groupKeyOf(rec kafkamodel.Record) GroupKey {
	dl := rec.DeadLetter
	if dl == nil {
		return GroupKey{}
	}
	return GroupKey{Type: ops.CleanText(dl.GroupType(), 500), Cause: ops.CleanText(dl.ExceptionCause, 500)}
}

// groupOfRecord reads the record at k and selects the records of its error group. A record that is
// not in the topic (any more) is refused by name.
func groupOfRecord(ctx context.Context, c Cluster, topic string, k RecordKey) (func(kafkamodel.Record) bool, error) {
	parts, err := c.Partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := inTopic(parts, topic, "error_group", k); err != nil {
		return nil, err
	}
	var key *GroupKey
	if _, err := search.ScanKafka(ctx, c, search.Query{Topic: topic, Partition: &k.Partition, Order: "oldest", FromOffset: &k.Offset,
		ToOffset: &k.Offset, Timeout: scanTimeout, Each: func(rec kafkamodel.Record) error {
			if rec.Offset == k.Offset {
				gk := groupKeyOf(rec)
				key = &gk
			}
			return nil
		}}); err != nil {
		return nil, err
	}
	if key == nil {
		return nil, ops.Invalid("error_group", fmt.Sprintf("partition %d offset %d is no dead letter of topic %s any more: look at its error groups again",
			k.Partition, k.Offset, topic))
	}
	return func(rec kafkamodel.Record) bool { return groupKeyOf(rec) == *key }, nil
}

// inGroupShown selects the records of the group g names by its type (a class or a fingerprint)
// and cause as the actor sees them (g.Shown), compared as the groups are keyed (ops.CleanText),
// so that a group whose type holds a NUL can be named without it.
func inGroupShown(g ErrorGroupRef) func(kafkamodel.Record) bool {
	shown := g.Shown
	if shown == nil {
		shown = func(typ, cause string) (string, string) { return typ, cause }
	}
	wantType := ops.CleanText(g.ExceptionType, 500)
	return func(rec kafkamodel.Record) bool {
		var class, group, cause string
		if dl := rec.DeadLetter; dl != nil {
			class, group, cause = dl.ExceptionType, dl.GroupType(), dl.ExceptionCause
		}
		class, _ = shown(class, cause)
		group, cause = shown(group, cause)
		return (ops.CleanText(class, 500) == wantType || ops.CleanText(group, 500) == wantType) &&
			(g.ExceptionCause == nil || ops.CleanText(*g.ExceptionCause, 500) == ops.CleanText(cause, 500))
	}
}

// checkState refuses a state a person may not set, and a reason too long for the audit log.
func checkState(state, reason string) error {
	switch {
	case state == StateReplayed:
		return ops.Invalid("state", "replayed is set by a replay job; choose open, resolved or ignored")
	case state != StateOpen && state != StateResolved && state != StateIgnored:
		return ops.Invalid("state", "must be open, resolved or ignored")
	case utf8.RuneCountInString(reason) > maxReason:
		return ops.Invalid("reason", fmt.Sprintf("at most %d characters", maxReason))
	}
	return nil
}

func markOf(rec kafkamodel.Record) Mark {
	m := Mark{RecordKey: RecordKey{Partition: rec.Partition, Offset: rec.Offset}}
	if dl := rec.DeadLetter; dl != nil {
		m.ExceptionType, m.ExceptionCause = dl.ExceptionType, dl.ExceptionCause
	}
	return m
}

// scanSelect reads the whole topic, oldest first, and keeps the records keep (and cel, on what
// view shows) selects. A topic larger than MaxScan, or a read that runs out of time, is refused
// rather than resolved in part: a person asked for every record of the selection.
func scanSelect(ctx context.Context, c Cluster, topic string, cel *search.Filter, view func(kafkamodel.Record) kafkamodel.Record,
	keep func(kafkamodel.Record) bool) ([]Mark, Result, error) {
	var marks []Mark
	q := search.Query{Topic: topic, Order: "oldest", Filter: cel, View: view, MaxScan: MaxScan, Timeout: scanTimeout,
		Each: func(rec kafkamodel.Record) error {
			if keep(rec) {
				marks = append(marks, markOf(rec))
			}
			return nil
		}}
	sr, err := search.ScanKafka(ctx, c, q)
	if err != nil {
		return nil, Result{}, err
	}
	if !sr.Exhausted {
		return nil, Result{}, ops.Invalid("topic", fmt.Sprintf("the selection could not be read whole (%d records read, stopped by %s); resolve a narrower one",
			sr.Scanned, sr.Stopped))
	}
	return marks, Result{Matched: int64(len(marks)), Scanned: sr.Scanned}, nil
}

// inTopic refuses, naming field, a record that is not in the topic's partitions parts now.
func inTopic(parts []kafkamodel.PartitionRange, topic, field string, k RecordKey) error {
	i := slices.IndexFunc(parts, func(p kafkamodel.PartitionRange) bool { return p.Partition == k.Partition })
	if i < 0 {
		return ops.Invalid(field, fmt.Sprintf("partition %d is not in topic %s (it has %d)", k.Partition, topic, len(parts)))
	}
	if k.Offset < parts[i].Start || k.Offset >= parts[i].End {
		return ops.Invalid(field, fmt.Sprintf("partition %d offset %d is not in topic %s (offsets %d to %d)",
			k.Partition, k.Offset, topic, parts[i].Start, parts[i].End-1))
	}
	return nil
}

// readRecords reads the named records (each partition's span of them, in one scan) for their
// error group; a record that is not in the topic is refused by name.
func readRecords(ctx context.Context, c Cluster, topic string, keys []RecordKey) ([]Mark, Result, error) {
	parts, err := c.Partitions(ctx, topic)
	if err != nil {
		return nil, Result{}, err
	}
	byPart := map[int32][]int64{}
	for _, k := range keys {
		if err := inTopic(parts, topic, "records", k); err != nil {
			return nil, Result{}, err
		}
		byPart[k.Partition] = append(byPart[k.Partition], k.Offset)
	}
	var marks []Mark
	var res Result
	for p, offs := range byPart {
		slices.Sort(offs)
		offs = slices.Compact(offs)
		want := map[int64]bool{}
		for _, o := range offs {
			want[o] = true
		}
		from, to := offs[0], offs[len(offs)-1]
		sr, err := search.ScanKafka(ctx, c, search.Query{Topic: topic, Partition: &p, Order: "oldest", FromOffset: &from, ToOffset: &to,
			Timeout: scanTimeout, Each: func(rec kafkamodel.Record) error {
				if want[rec.Offset] {
					marks = append(marks, markOf(rec))
					delete(want, rec.Offset)
				}
				return nil
			}})
		if err != nil {
			return nil, Result{}, err
		}
		res.Scanned += sr.Scanned
		for o := range want { // compacted away
			return nil, Result{}, ops.Invalid("records", fmt.Sprintf("partition %d offset %d is no dead letter of topic %s: "+
				"no longer in it, or a transaction marker or a record of an aborted transaction, which no consumer receives", p, o, topic))
		}
	}
	res.Matched = int64(len(marks))
	return marks, res, nil
}

// OpenCounts fills, for each dead-letter topic of a cluster, how many of its records are no
// longer open (Settled: resolved, ignored or replayed). When the store cannot say, every record
// counts as open and the error is returned beside the topics: showing too many dead letters is
// the safe side.
func (t *Triage) OpenCounts(ctx context.Context, cluster string, topics []kafkamodel.DLTopic) ([]kafkamodel.DLTopic, error) {
	return OpenCounts(ctx, t.store, cluster, topics)
}

// Settled counts what is no longer open; *store.Store implements it.
type Settled interface {
	SettledDeadLetters(ctx context.Context, cluster string, spans []Span) (map[string]int64, error)
}

// OpenCounts is Triage.OpenCounts over any Settled. The topics are copied, never changed in place
// (they may be a cached snapshot's).
func OpenCounts(ctx context.Context, st Settled, cluster string, topics []kafkamodel.DLTopic) ([]kafkamodel.DLTopic, error) {
	out := slices.Clone(topics)
	var spans []Span
	for i := range out {
		out[i].Settled = 0
		for _, p := range out[i].Partitions {
			// The offsets whose records are counted (DLPartition.Records): up to the last stable one.
			spans = append(spans, Span{Topic: out[i].Topic, TopicID: out[i].TopicID, Partition: p.Partition, Start: p.Start, End: p.Stable})
		}
	}
	if st == nil || len(spans) == 0 {
		return out, nil
	}
	settled, err := st.SettledDeadLetters(ctx, cluster, spans)
	if err != nil {
		return out, err
	}
	for i := range out {
		out[i].Settled = settled[out[i].Topic]
	}
	return out, nil
}

// topicID asks the cluster for the topic's ID now. Read after the records it is asked for (a
// topic created again in between then shows them open: too many open, never too few).
func (t *Triage) topicID(ctx context.Context, cluster, topic string) (string, error) {
	c, ok := t.clusters[cluster]
	if !ok {
		return "", ops.NotFound("kafka cluster %q is not configured", cluster)
	}
	return c.TopicID(ctx, topic)
}

// Resolutions reads the resolution of each record (open when never marked, or marked when
// another topic of the same name was there).
func (t *Triage) Resolutions(ctx context.Context, cluster, topic string, recs []kafkamodel.Record) (map[RecordKey]Resolution, error) {
	keys := make([]RecordKey, len(recs))
	for i, r := range recs {
		keys[i] = RecordKey{Partition: r.Partition, Offset: r.Offset}
	}
	id, err := t.topicID(ctx, cluster, topic)
	if err != nil {
		return nil, err
	}
	return t.store.Resolutions(ctx, cluster, topic, id, keys)
}

// StateLookup is the package's StateLookup for the topic as it is now: its ID is asked on first
// use, with the marks.
func (t *Triage) StateLookup(ctx context.Context, cluster, topic string) search.ResolutionOf {
	return stateLookup(ctx, t.store, cluster, topic, func() (string, error) { return t.topicID(ctx, cluster, topic) })
}

// OpenByErrorGroup fills each group's Settled count among the records the scan read: the marks
// the DLT list counts over the same offsets (Store.SettledByErrorGroup and SettledDeadLetters
// are one count), by the group key the marks keep (ops.CleanText of type and cause, as the
// sampler keys groups).
func (t *Triage) OpenByErrorGroup(ctx context.Context, cluster string, scan kafkamodel.ErrorScan) (kafkamodel.ErrorScan, error) {
	groups := slices.Clone(scan.Groups)
	scan.Groups = groups
	id, err := t.topicID(ctx, cluster, scan.Topic)
	if err != nil {
		return scan, err
	}
	var spans []Span
	for _, r := range scan.Ranges {
		spans = append(spans, Span{Topic: scan.Topic, TopicID: id, Partition: r.Partition, Start: r.Start, End: r.End})
	}
	settled, err := t.store.SettledByErrorGroup(ctx, cluster, scan.Topic, spans)
	if err != nil {
		return scan, err
	}
	for i := range groups {
		g := &groups[i]
		// Two groups whose type or cause differ only by what cleaning drops share a key: the
		// marks are shared out, never counted twice.
		k := GroupKey{Type: ops.CleanText(g.ExceptionType, 500), Cause: ops.CleanText(g.ExceptionCause, 500)}
		g.Settled = min(settled[k], g.Count)
		settled[k] -= g.Settled
	}
	return scan, nil
}

// ParseState reads a state= query value: "" gives def; "all" keeps every state.
func ParseState(raw, def string) (string, error) {
	if raw == "" {
		return def, nil
	}
	if raw == "all" {
		return raw, nil
	}
	for _, s := range States {
		if raw == s {
			return raw, nil
		}
	}
	return "", ops.Invalid("state", "must be open, resolved, ignored, replayed or all")
}
