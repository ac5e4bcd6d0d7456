// Package kafka renders the Kafka pages: consumer groups with their lag status, a group's history,
// dead-letter topics, a topic's records, and a dead-letter topic's errors grouped by type.
package kafka

import (
	"net/url"
	"strconv"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
)

// IndexPage lists the configured clusters.
type IndexPage struct {
	Meta     layout.Meta
	Clusters []string
}

// ClusterPage is one cluster: its groups (from the sampler) and its dead-letter topics.
type ClusterPage struct {
	Meta        layout.Meta
	Cluster     string
	SampledAt   time.Time
	SampleError string // the last sampling failed; the groups are from SampledAt
	// Refreshing: a newer sample is being taken behind this page (stale while revalidate).
	Refreshing  bool
	GroupsError string
	Groups      []GroupRow
	TopicsError string
	DLTs        []DLTRow
	// Transactions are the transactions open on the cluster's partitions as sampled, oldest
	// first; TransactionsAfter is the cluster's hanging_transaction_after ("5m").
	Transactions      []TransactionRow
	TransactionsAfter string
	// LiveURL is this page, polled every Refresh seconds (the sampler's interval) for new numbers.
	LiveURL string
	Refresh int
}

// TransactionRow is a transaction open on one partition: it holds the partition's last stable
// offset at StartOffset, where read_committed consumers stop.
type TransactionRow struct {
	Topic           string
	Partition       int32
	ProducerID      int64
	TransactionalID string // "" when no coordinator knows the producer
	State           string // the coordinator's; "" unknown
	StartOffset     int64
	Held            int64  // offsets held back (end − start offset)
	Open            string // how long it has been open ("7 min", "at least 7 min")
	Overdue         bool   // open longer than hanging_transaction_after: a problem
	Hanging         bool   // no coordinator lists the partition in the producer's transaction
	Groups          string // the groups waiting at its start offset, comma-separated
	// AbortCommand is Kafka's own command an admin runs to abort a hanging transaction.
	AbortCommand string
}

// GroupRow is one consumer group in the cluster's table.
type GroupRow struct {
	Name     string
	Type     string // classic, consumer (KIP-848) or share
	State    string
	Members  int
	TotalLag int64
	// TimeLag is the furthest-behind partition's time lag ("14 min 3 s"); "" when unknown.
	TimeLag   string
	TimeLagMS int64 // for sorting; -1 unknown
	Status    string
	Reason    string
	Severity  int
	Topics    string
	Error     string
}

// DLTRow is one dead-letter or retry topic.
type DLTRow struct {
	Topic      string
	Retry      bool
	Partitions int
	// Records are data records a read_committed consumer gets, counted; while Counted is false
	// (a large topic still being counted) the most there can be.
	Records  int64
	Counted  bool
	Offsets  int64 // end − start over the partitions: markers and aborted records included
	Open     int64 // records not resolved, ignored or replayed
	NewestAt time.Time
}

// GroupPage is one group: status, trend chart, partitions.
type GroupPage struct {
	Meta    layout.Meta
	Cluster string
	Name    string
	// Type is classic, consumer (KIP-848) or share (KIP-932). A share group has no committed
	// offsets: its partitions show the share-partition start offset and the broker's lag, its
	// time lag is the age of the oldest unacknowledged record, and it offers no offset move.
	Type string
	// Epoch is a consumer or share group's "group epoch · assignment epoch"; "" for classic.
	Epoch string
	// DeliveryLimit is a share group's delivery limit ("5"), DeliveryLimitNote where it is set;
	// "" when unknown or not a share group.
	DeliveryLimit, DeliveryLimitNote string
	// MemberRows are the group's members with what they own.
	MemberRows  []MemberRow
	State       string
	Protocol    string
	Members     int
	TotalLag    int64
	TimeLag     string // the furthest-behind partition's time lag; "" when unknown
	Status      string
	Reason      string
	StatusSince time.Time // when the status's finding began as far as the samples show; zero when they do not say
	Rate        string    // "" until the sampler has two samples
	CatchUp     string
	CatchUpNote string // under CatchUp; "" says where it comes from
	SampledAt   time.Time
	// OffsetsAt is when the committed and end offsets (so the lags) were read, a moment ago; zero
	// when they are the sample's. Refreshing: a newer sample is being taken behind this page.
	OffsetsAt   time.Time
	Refreshing  bool
	SampleError string
	Error       string
	Range       string // 1h, 6h, 24h, 7d
	Partitions  []PartitionRow
	// LiveURL is this page, polled every Refresh seconds (the sampler's interval) for new numbers.
	LiveURL string
	Refresh int
	// Skip is offered on a STALL or STOP group to an operator: skip the record the worst
	// partition is stuck on. Nil offers nothing.
	Skip *SkipOffer
	// Pipelines are the group's main topics with their retry topics and DLTs, stage by stage.
	Pipelines []PipelineView
	// HeldBy are the open transactions the group waits at: on a partition it consumes, it has
	// consumed up to where the transaction began, and its read_committed consumers get nothing
	// past that until the transaction ends, whatever its lag says.
	HeldBy []TransactionRow
}

// PipelineView is one main topic and the retry topics and DLTs that carry its failures.
type PipelineView struct {
	Topic    string
	Verdict  string
	BackedUp bool
	Stages   []PipelineStageView
}

// PipelineStageView is one stage, its numbers as text ("" shows a dash).
type PipelineStageView struct {
	Topic, Href, Stage    string
	Lag, TimeLag, Records string
	Inflow, Consumption   string
	LagSort, RecordsSort  int64
}

// liveTargets are the parts of the group page a refresh replaces.
func liveTargets(p GroupPage) []string {
	t := []string{"group-stats", "partitions-body"}
	if len(p.Pipelines) > 0 {
		t = append(t, "pipelines")
	}
	return t
}

// MemberRow is one member of a group.
type MemberRow struct {
	Member   string // client-id@host
	ID       string
	Instance string // group.instance.id of a static member
	Epoch    string // the member epoch (consumer, share); "" for classic members
	Assigned string // "orders 0–2, refunds 1"
	Target   string // a reconciling KIP-848 member's target assignment; "" when it has it
	Classic  bool   // a classic-protocol member of a consumer group
}

// IsShare is whether the page is a share group's.
func (p GroupPage) IsShare() bool { return p.Type == "share" }

// TypeLabel names a group type for people.
func TypeLabel(t string) string {
	switch t {
	case "consumer":
		return "consumer group (KIP-848)"
	case "share":
		return "share group"
	default:
		return "classic group"
	}
}

// PartitionRow is one partition of a group.
type PartitionRow struct {
	Topic     string
	Partition int32
	// ShareStart is a share group's share-partition start offset (-1 none yet); Committed is then -1.
	ShareStart int64
	Committed  int64
	// NoRecords is how many offsets from Committed on hold no record (transaction markers,
	// aborted records) before the next one the group will consume.
	NoRecords int64
	End       int64
	Lag       int64
	// LagAtMost: Lag is an upper bound (a share group on a broker that reports no lag: every
	// record from the start offset on, some maybe acknowledged already).
	LagAtMost bool
	TimeLag   string // "" when unknown
	TimeLagMS int64  // for sorting; -1 unknown
	Status    string
	Reason    string
	Member    string
}

// TopicPage is one page of a topic's records.
type TopicPage struct {
	Meta    layout.Meta
	Cluster string
	Topic   string
	// TopicID is the topic's ID when the page was read ("" unknown): its plan forms carry it, and
	// a plan of a topic deleted and created again since is refused.
	TopicID   string
	Partition int32
	// All: the page merges every partition, newest (or oldest) first by timestamp; Partition
	// and Start/End are then unused.
	All bool
	// Partitions are the topic's partitions for the selector, each with its record count.
	Partitions []PartitionOption
	Order      string
	Limit      int
	Exception  string // only records of this exception type are shown (ops.CleanText of the type, as error groups key it)
	// Cause, when ByCause, narrows Exception to one cause ("" for none): one error group's records.
	Cause       string
	ByCause     bool
	OffsetInput string
	AtInput     string
	Start, End  int64
	// Stable is the partition's last stable offset: a committed page ends there (a transaction
	// open since then holds the offsets up to End).
	Stable int64
	// Uncommitted: an admin asked for every record written (isolation=uncommitted); aborted and
	// unstable records are marked and cannot be selected for a plan. CanUncommitted offers it.
	Uncommitted    bool
	CanUncommitted bool
	Read           int // records read for this page (before the exception filter)
	Records        []RecordView
	NextURL        string
	PrevURL        string
	CanReveal      bool // values are masked by redaction rules and an admin may reveal them (audited)
	Masked         bool // redaction rules apply to this reader: values are not offered for editing
	Revealed       bool // an admin asked for this page unmasked (reveal=true): its rows' views load unmasked too
	// Back is where the forms of a record's view return (RecordDetail: the list it was expanded
	// in); "" for the page's own address in its state.
	Back  string
	State string // the resolution state shown: open (default), resolved, ignored, replayed or all
	// DeadLetters: the topic is a dead-letter topic, its records dead letters with a state, error
	// groups and plans; otherwise the page shows records only.
	DeadLetters bool
	Flash       string // what the last action did
	// Filter is the CEL expression of a content search (filter=); ScanURL the records API that
	// scans for it page by page (the page's script streams the matches in), ExportURL its export
	// when the reader may export.
	Filter    string
	ScanURL   string
	ExportURL string
}

// FilterExamples are offered in the filter box (a datalist): variable names and common shapes.
var FilterExamples = []string{
	`key == "order-123"`,
	`value.orderId == 123`,
	`headers["tenant"] == "7"`,
	`dead_letter.exception_type.endsWith("TimeoutException")`,
	`dead_letter.exception_message.contains("timeout")`,
	`timestamp > timestamp("2026-12-01T10:00:00Z")`,
	`partition == 2 && offset > 1000`,
	`size > 10000`,
}

// PartitionOption is one partition in the selector: its number and the offsets a committed read
// spans (start to the last stable offset), which is the most records it can hold: transaction
// markers and aborted records take offsets too.
type PartitionOption struct {
	Partition int32
	Records   int64
}

// RecordView is one record, rendered for people.
type RecordView struct {
	Partition     int32
	Offset        int64
	Timestamp     time.Time
	Key           string
	KeyEncoding   string
	Value         string
	ValueEncoding string
	Truncated     bool
	OriginalSize  int
	Size          int
	Headers       []HeaderView
	DeadLetter    *DeadLetterView
	// KeyCut: Key is cut for display; KeySize is the key's whole length in bytes.
	KeyCut  bool
	KeySize int
	// Line is what the record's row shows (the detail shows more).
	Line RowLine
	// KeySchema and ValueSchema name the schema the key or value was decoded with ("" when it
	// was not); the *Error fields say why decoding failed (Key or Value is then the raw bytes).
	KeySchema, KeySchemaError     string
	ValueSchema, ValueSchemaError string
	Resolution                    ResolutionView
	Notes                         []NoteView
	// Aborted: a record of an aborted transaction (shown to an admin's uncommitted read only): no
	// consumer received it, it is no dead letter and is offered for no replay. Unstable: at or
	// past the last stable offset, not decided yet.
	Aborted, Unstable bool
	// ReplayJob is the Redrive replay job whose copy this record is (its x-redrive-replay-id):
	// the message again, not a service's own publication or failure; "" for any other record.
	ReplayJob string
}

// Plannable is whether the record may be selected for a replay: a dead letter a consumer
// received, not an aborted or undecided transaction's.
func (r RecordView) Plannable() bool { return r.DeadLetter != nil && !r.Aborted && !r.Unstable }

// ResolutionView is what was decided about a dead letter: State "open" when nobody marked it.
type ResolutionView struct {
	State  string
	By     string
	At     time.Time
	Reason string
	JobID  string
}

// ResolutionStates are the states a records page offers, "all" last.
var ResolutionStates = []string{"open", "resolved", "ignored", "replayed", "all"}

// RowLine is a record's row: a line's worth of its key (else its dead letter's message id), its
// value and its exception type and message, for the table's cells and their tooltips — a row
// showed each whole twice, and a header can be a megabyte.
type RowLine struct {
	Key, Value, Exception, Message string
}

// HeaderView is one header, its value as text: cut for display when Cut, Size the value's whole
// length in bytes.
type HeaderView struct {
	Key   string
	Value string
	Cut   bool
	Size  int
}

// DeadLetterView is a record's decoded failure story.
type DeadLetterView struct {
	OriginalTopic     string
	OriginalPartition string
	OriginalOffset    string
	ConsumerGroup     string
	ExceptionType     string
	ExceptionCause    string
	ExceptionMessage  string
	Stacktrace        string
	RetryCount        string
	MessageID         string
	TraceID           string
	Convention        string
	// MessageCut and StacktraceCut: ExceptionMessage and Stacktrace are cut for display;
	// MessageSize and StacktraceSize are their whole lengths in bytes.
	MessageCut, StacktraceCut   bool
	MessageSize, StacktraceSize int
}

// ErrorsPage is a dead-letter topic's records grouped by exception.
type ErrorsPage struct {
	Meta    layout.Meta
	Cluster string
	Topic   string
	Scanned int64
	Total   int64
	Capped  bool
	Groups  []ErrorGroupRow
	Flash   string // what the last action did
}

// ErrorGroupRow is one exception type (and cause): one bug, one row.
type ErrorGroupRow struct {
	ExceptionType   string
	ExceptionCause  string
	Count           int64
	FirstAt         time.Time
	LastAt          time.Time
	OriginalTopics  string
	SampleMessage   string
	SamplePartition int32
	SampleOffset    int64
	Open            int64 // of Count, the records not resolved, ignored or replayed
	// ReplayCopies is how many of Count are dead letters of Redrive's replay copies: failed
	// again after a replay.
	ReplayCopies int64
	Notes        []NoteView
	// Masked: the group's type is hidden from the reader (redaction), who can resolve it (by its
	// sample record) but not plan its replay or note it by a type they cannot see.
	Masked bool
}

// NoteView is a person's note on an error group or a record (components.NoteView).
type NoteView = components.NoteView

// detailURL is what a row loads when it is expanded: the record's view, with the list to return
// to after a form in it and the list's way of reading (uncommitted, revealed).
func detailURL(p TopicPage, r RecordView) string {
	v := url.Values{"back": {backURL(p)}}
	if p.Uncommitted {
		v.Set("isolation", "uncommitted")
	}
	if p.Revealed {
		v.Set("reveal", "true")
	}
	return paths.WithQuery(paths.KafkaRecord(p.Cluster, p.Topic, r.Partition, r.Offset), v)
}

// backURL is where a record's forms return: the list its view was expanded in.
func backURL(p TopicPage) string {
	if p.Back != "" {
		return p.Back
	}
	return stateURL(p, p.State)
}

// RecordPage is the topic page of one record, whatever its state (an error group's sample may
// be resolved since, and the page's default state, open, would hide it): where a row's "open it
// on its own page" leads, and a record's path opened without htmx.
func RecordPage(c, t string, p int32, off int64) string {
	return paths.WithQuery(paths.KafkaTopic(c, t), url.Values{"partition": {itoa32(p)}, "offset": {strconv.FormatInt(off, 10)},
		"limit": {"1"}, "state": {"all"}})
}

// exceptionURL opens an error group's records across every partition of the topic.
// exceptionURL is the records of one error group across partitions: its type and cause as the
// groups are keyed (ops.CleanText: no NUL, valid UTF-8), so the link lists exactly its records.
func exceptionURL(c, t string, exc, cause string) string {
	return paths.WithQuery(paths.KafkaTopic(c, t), url.Values{"partition": {"all"},
		"exception": {GroupText(exc)}, "cause": {GroupText(cause)}})
}

// GroupText is an exception type or cause as error groups and their marks key it (the store keeps
// ops.CleanText of it, at most 500 bytes): what a group's link carries and the filter compares.
func GroupText(s string) string { return ops.CleanText(s, 500) }

// SetGroupFilter adds the page's error-group filter (exception, and cause when given) to v.
func (p TopicPage) SetGroupFilter(v url.Values) {
	if p.Exception == "" {
		return
	}
	v.Set("exception", p.Exception)
	if p.ByCause {
		v.Set("cause", p.Cause)
	}
}

// partitionURL is the topic's records in one partition ("0") or across all ("all").
func partitionURL(c, t, partition string) string {
	return paths.WithQuery(paths.KafkaTopic(c, t), url.Values{"partition": {partition}})
}

func itoa32(n int32) string { return strconv.Itoa(int(n)) }

func i64(n int64) string { return strconv.FormatInt(n, 10) }

// lagText is a partition's lag; a dash when unknown (-1).
func lagText(n int64) string {
	if n < 0 {
		return "—"
	}
	return components.FormatNum(n)
}

// offsetText formats an offset like every other number on the page (lag included); −1 is "—".
func offsetText(n int64) string {
	if n < 0 {
		return "—"
	}
	return components.FormatNum(n)
}

var ranges = []string{"1h", "6h", "24h", "7d"}

// shortClass keeps the last segment of a Java class name for narrow columns.
func shortClass(fqcn string) string {
	for i := len(fqcn) - 1; i >= 0; i-- {
		if fqcn[i] == '.' {
			return fqcn[i+1:]
		}
	}
	return fqcn
}

// revealURL is the page again with reveal=true (an admin's audited look at masked values).
func revealURL(p TopicPage) string {
	return paths.Reveal("partition", partitionValue(p), "order", p.Order, "limit", strconv.Itoa(p.Limit),
		"offset", p.OffsetInput, "exception", p.Exception, "cause", p.Cause)
}

// partitionValue is the page's partition query value: a number, or "all".
func partitionValue(p TopicPage) string {
	if p.All {
		return "all"
	}
	return itoa32(p.Partition)
}

// topicSubtitle says what the page shows: one partition's offsets, or every partition.
func topicSubtitle(p TopicPage) string {
	if p.All {
		var n int64
		for _, o := range p.Partitions {
			n += o.Records
		}
		return "All " + strconv.Itoa(len(p.Partitions)) + " partitions, merged by timestamp · " + components.FormatNum(n) + " offsets"
	}
	s := "Partition " + itoa32(p.Partition) + " · offsets " + components.FormatNum(p.Start) + " to " + components.FormatNum(p.End)
	if p.Stable < p.End {
		s += " · last stable offset " + components.FormatNum(p.Stable)
	}
	return s
}

// optionLabel is a partition in the selector: "2 (at most 1,204 records)". Only offsets are
// known here, and transaction markers and aborted records take offsets too.
func optionLabel(o PartitionOption) string {
	return itoa32(o.Partition) + " (at most " + components.FormatNum(o.Records) + " records)"
}

// dltRecords is a dead-letter topic's records for the list: "6", or "≤ 1,204" while counting.
func dltRecords(t DLTRow) string {
	if t.Counted {
		return components.FormatNum(t.Records)
	}
	return "≤ " + components.FormatNum(t.Records)
}

// dltRecordsTitle says what the number counts.
func dltRecordsTitle(t DLTRow) string {
	s := "records a read_committed consumer gets, counted; " + components.FormatNum(t.Offsets) + " offsets"
	if !t.Counted {
		s = "still counting: at most this many records; " + components.FormatNum(t.Offsets) + " offsets"
	}
	return s
}

// isolationURL is the page as read with isolation ("committed" or "uncommitted").
func isolationURL(p TopicPage, isolation string) string {
	v := url.Values{"partition": {itoa32(p.Partition)}, "order": {p.Order}, "limit": {strconv.Itoa(p.Limit)}, "state": {p.State}}
	if p.All {
		v.Set("partition", "all")
	}
	if isolation == "uncommitted" {
		v.Set("isolation", isolation)
	}
	return paths.WithQuery(paths.KafkaTopic(p.Cluster, p.Topic), v)
}

// rowKey names a record in ids and checkbox values: "partition:offset".
func rowKey(r RecordView) string { return itoa32(r.Partition) + ":" + i64(r.Offset) }

// rawURL is the record in the records API, which gives it whole (its value up to the API's cap):
// where a page that cut a part of it for display points, read as the page was.
func rawURL(p TopicPage, r RecordView) string {
	v := url.Values{"partition": {itoa32(r.Partition)}, "offset": {i64(r.Offset)}, "limit": {"1"}}
	if p.Uncommitted {
		v.Set("isolation", "uncommitted")
	}
	if p.Revealed {
		v.Set("reveal", "true")
	}
	return paths.WithQuery(paths.APIKafkaRecords(p.Cluster, p.Topic), v)
}

// original is where a dead letter came from: "orders/2/118".
func original(d *DeadLetterView) string {
	if d == nil || d.OriginalTopic == "" {
		return ""
	}
	s := d.OriginalTopic
	if d.OriginalPartition != "" {
		s += "/" + d.OriginalPartition
		if d.OriginalOffset != "" {
			s += "/" + d.OriginalOffset
		}
	}
	return s
}

// joinDot joins the non-empty parts with " · ": no empty separators ("main · Empty ·").
func joinDot(parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += " · "
		}
		out += p
	}
	return out
}

// stateURL is the topic page showing the records in one resolution state.
func stateURL(p TopicPage, state string) string {
	v := url.Values{"state": {state}, "order": {p.Order}}
	if p.All {
		v.Set("partition", "all")
	} else {
		v.Set("partition", strconv.Itoa(int(p.Partition)))
	}
	p.SetGroupFilter(v)
	return paths.WithQuery(paths.KafkaTopic(p.Cluster, p.Topic), v)
}

// recordColumns is how many columns the records table has: a dead-letter topic's show the
// exception, state and original topic, another topic's the value.
func recordColumns(p TopicPage) string {
	if p.DeadLetters {
		return "9"
	}
	return "7"
}
