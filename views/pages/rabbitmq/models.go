// Package rabbitmq renders the RabbitMQ pages: a broker's queues with their depths, rates and
// dead-letter topology (from the sampler's snapshot), a queue with its history chart and
// dead-letter settings, and the dead-letter queue browser with its error groups and replay forms.
package rabbitmq

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
)

// IndexPage lists the configured brokers.
type IndexPage struct {
	Meta    layout.Meta
	Brokers []string
}

// BrokerPage is one broker: every queue of the watched vhosts and the dead-letter topology.
type BrokerPage struct {
	Meta   layout.Meta
	Broker string
	// SnapshotError is set when the sampler's snapshot could not be read at all (the console's
	// store is down); SampleError when the last sampling of the broker failed, the queues being
	// the last good sample taken at SampledAt.
	SnapshotError string
	SampleError   string
	SampleErrorAt time.Time
	SampledAt     time.Time
	MultiVhost    bool   // show the vhost column
	Vhost         string // the one vhost, when not MultiVhost
	Queues        []QueueRow
	Edges         []EdgeRow
	RetryLoops    []RetryLoopRow
	// Totals for the stat cards: DLQMessages and DLQInflow add up the dead-letter queues whose
	// counts were reported; DLQUnknown counts the others (their messages are not known).
	DLQs        int
	DLQMessages int64
	DLQInflow   float64 // messages per second arriving in the dead-letter queues
	DLQUnknown  int
	Growing     int
	// StatsNotice is said once above the queues when the broker reports no queue statistics
	// (rabbitmodel.StatsDisabledNotice); "" when it reports them.
	StatsNotice string
	// LiveURL is this page, polled every Refresh seconds (the sampler's interval) for new numbers.
	LiveURL string
	Refresh int
}

// QueueRow is one queue in the broker's table.
type QueueRow struct {
	Vhost         string
	Name          string
	Type          string
	State         string
	Ready         int64
	Unacked       int64
	Consumers     int64
	PublishRate   float64
	DeliverRate   float64
	AckRate       float64
	RedeliverRate float64
	Inflow        float64 // messages arriving a second, dead-lettered ones included (queues.Queue.Inflow)
	DeadLetterTo  string  // the dead-letter exchange for display: "" none, "(default)" the default exchange
	DLQ           bool
	Retry         bool
	Growing       bool
	Growth        string
	Policy        string
	// HeldFor is how long a dead-letter queue has held messages (queues.Queue.HeldSince until the
	// page was made); 0 when unknown.
	HeldFor time.Duration
	// NotBrowsable says in a few words that the console refuses to browse the queue ("" when it
	// browses it), NotBrowsableWhy why: the list offers no way to a refusal without saying so.
	NotBrowsable, NotBrowsableWhy string
	// CountsUnknown: the broker did not report the queue's message counts (Ready, Unacked, Inflow
	// and DeadLetterHeld are 0 meaning not known); ConsumersUnknown: nor its consumers and rates.
	// Pages show "—" for them, StatsNote (rabbitmodel.Queue.StatsNote) saying why.
	CountsUnknown, ConsumersUnknown bool
	StatsNote                       string
	// LastCounted is, while the counts are not known, the last sample that had them; nil when
	// none did while the console watched.
	LastCounted *Counted
	// DeadLetterHeld is how many dead letters a quorum queue keeps until a target queue confirms
	// them (at-least-once dead-lettering). DeadLetterStrategy is how it dead-letters as RabbitMQ
	// applies it ("" without a dead-letter exchange, and for classic queues and streams);
	// DeadLetterFallback says why that is not the strategy asked for ("" when it is).
	DeadLetterHeld     int64
	DeadLetterStrategy string
	DeadLetterFallback string
}

// Counted is a queue's counts as an earlier sample had them, Ago before the page was made.
type Counted struct {
	Ready, Unacked int64
	Ago            time.Duration
}

// QueueLink names a queue to link to.
type QueueLink struct {
	Vhost string
	Name  string
}

// EdgeRow is one queue's dead-lettering: from the queue, through an exchange, into queues.
type EdgeRow struct {
	From         QueueLink
	Exchange     string // "(default)" for the default exchange
	ExchangeType string
	RoutingKey   string // "" keeps the messages' own keys; OwnKeys then lists them
	OwnKeys      string
	To           []QueueLink
	Missing      bool
	AllBound     bool
	Note         string
	Loop         bool // part of a retry loop: a retry queue going back to work, or work going to retry
}

// RetryLoopRow is one retry loop.
type RetryLoopRow struct {
	Vhost string
	Retry string
	Work  string
	Delay string
}

// QueuePage is one queue: numbers, history chart, dead-letter settings and where dead letters go.
type QueuePage struct {
	Meta           layout.Meta
	Broker         string
	Vhost          string
	Name           string
	Row            QueueRow
	Total          int64
	SampledAt      time.Time
	SampleError    string
	Range          string // 1h, 6h, 24h, 7d
	Settings       []Setting
	Arguments      []KV
	Edge           *EdgeRow    // where this queue's dead letters go; nil without a dead-letter exchange
	From           []QueueLink // queues dead-lettering into this one
	RetryOf        string      // the work queue when this is a retry queue
	SingleActive   bool
	OperatorPolicy string
	// BrowseRefused says why a browse of the queue is refused (a quorum queue with a delivery
	// limit on RabbitMQ 3.x): no browse is offered then. "" offers the browse.
	BrowseRefused string
	// BrowseCost says what each browse costs (a quorum queue with a delivery limit on RabbitMQ
	// 4.x) and how to make it free; "" when a browse costs nothing that counts.
	BrowseCost string
	// StatsNotice is BrokerPage.StatsNotice: the broker reports no queue statistics.
	StatsNotice string
	// LiveURL is this page, polled every Refresh seconds (the sampler's interval) for new numbers.
	LiveURL string
	Refresh int
}

// Setting is one effective queue setting and where it comes from.
type Setting struct {
	Key    string
	Value  string
	Source string // argument, policy, "argument and policy (smaller wins)", …
}

// KV is one key and its value as text. A message's header or property is cut for display when
// Cut, Size being the value's whole length in bytes.
type KV struct {
	Key   string
	Value string
	Cut   bool
	Size  int
}

// MessagesPage is the dead-letter queue browser.
type MessagesPage struct {
	Meta layout.Meta
	// NoPlan says why no replay or discard of this queue is offered (a stream:
	// rabbitmodel.StreamNotASource); "" when one is.
	NoPlan string
	Broker string
	Vhost  string
	Queue  string
	Limit  int
	// Filter is a CEL content search (filter=) over the queue's head; ScanURL is the messages API
	// that answers it (the page's script streams the matches in), ExportURL its export when the
	// reader may export.
	Filter    string
	ScanURL   string
	ExportURL string
	// Filters: reason exact, exception message substring (a search), and Group, an error group's
	// key as a replay plan's filter.exception_type selects it (the plan form carries it over).
	Reason    string
	Exception string
	Group     string
	// Refused is why the queue cannot be browsed safely (a 409); Error why it could not be read.
	Refused     string
	Error       string
	Type        string
	Ready       int64
	Consumers   int64
	Unacked     int64 // held unacknowledged by others when the browse started: not shown
	Complete    bool  // false: the list may miss messages others hold (Notes say why)
	Redelivered bool  // the browse requeued what it read
	Notes       []string
	// CountsUnknown: the latest sample has no message counts for the queue, StatsNote saying why.
	// The browse's ready count and consumers are the broker's live answer, known all the same,
	// but for a stream (whose ready count is the management API's) and for Unacked, which
	// comes from the same statistics: those are shown as "—".
	CountsUnknown bool
	StatsNote     string
	// DeliveryLimit is the quorum queue's delivery limit the browse counted against ("" none) and
	// DeliveryLimitFrom where it comes from; BrowseFix how to make browsing it free.
	DeliveryLimit     string
	DeliveryLimitFrom string
	BrowseFix         string
	// Kept counts the messages read that had too few deliveries left to go back: they were moved
	// to Redrive's archive (MessageView.Kept).
	Kept      int
	Read      int // messages browsed
	Groups    []GroupRow
	Reasons   []string // distinct reasons among the messages browsed, for the filter
	Messages  []MessageView
	CanReveal bool // an admin may reveal masked values (audited)
	Revealed  bool // the page reveals them (reveal=true): its links to the raw messages do too
	// ReplayedCopies counts the messages browsed that a job already replayed (MessageView.ReplayedBy).
	ReplayedCopies int
}

// GroupRow is one (reason, exception message) group among the browsed messages.
type GroupRow struct {
	Reason           string
	Key              string // ops.ErrorGroupKey of its exception messages
	ExceptionMessage string // the first message's, an example
	Count            int
	FirstAt          *time.Time
	LastAt           *time.Time
	OriginalQueues   string
	Positions        string
	Notes            []components.NoteView // people's notes on this error group
}

// MessageView is one browsed message, rendered for people.
type MessageView struct {
	Position     int
	Offset       string // stream offset; "" for other queues
	MessageID    string
	Exchange     string // "(default)" for the default exchange
	RoutingKey   string
	Redelivered  bool
	Properties   []KV // only those set
	Headers      []KV
	Body         string
	BodyEncoding string
	Truncated    bool
	Size         int
	Redacted     bool
	DeadLetter   *DeadLetterView
	// At is when the message died (its first x-death), else its timestamp property; zero: unknown.
	At time.Time
	// ReplayTo is where a replay sends it, for the table; CannotReplay says why a replay cannot
	// ("" when it can): the message carries no original exchange, routing key or queue.
	ReplayTo     string
	CannotReplay string
	Notes        []components.NoteView // people's notes on this message (by its id)
	// ReplayedBy is the job that already replayed this dead letter: the message is a copy the broker
	// returned after it lost that job's ack. "" for the rest.
	ReplayedBy string
	// DeliveryCount is how many deliveries the queue had counted for the message before this
	// browse (a quorum queue's x-delivery-count); DeliveriesLeft how many more returns its limit
	// allows after this browse's (-1: no limit).
	DeliveryCount  int64
	DeliveriesLeft int64
	// Kept: the message had too few deliveries left to go back, and was moved to Redrive's archive.
	// It is no longer in the queue: it is replayed from the archive, not from here.
	Kept bool
	// Line is what the message's row shows (the detail shows more).
	Line MessageLine
}

// MessageLine is a message's row: a line's worth of its id, reason, exception message, original
// queue and destination, for the table's cells and their tooltips — a row showed the exception
// message whole twice, and a header can be hundreds of kilobytes.
type MessageLine struct {
	MessageID, Reason, Exception, OriginalQueue, ReplayTo string
}

// DeadLetterView is a message's decoded dead-letter story.
type DeadLetterView struct {
	Reason           string
	Count            int64
	LastQueue        string
	FirstReason      string
	OriginalQueue    string
	Destination      string // "exchange orders, routing key order.created": where a replay sends it
	FirstDeathAt     *time.Time
	ExceptionMessage string
	Stacktrace       string
	ReplayCount      int
	Deaths           []DeathView
	// MessageCut and StacktraceCut: ExceptionMessage and Stacktrace are cut for display;
	// MessageSize and StacktraceSize are their whole lengths in bytes.
	MessageCut, StacktraceCut   bool
	MessageSize, StacktraceSize int
}

// DeathView is one x-death entry.
type DeathView struct {
	Queue       string
	Reason      string
	Count       int64
	Time        *time.Time
	Exchange    string
	RoutingKeys string
}

// groupURL is the messages page narrowed to one error group: its reason and its key.
func groupURL(b, vhost, q string, limit int, reason, group string) string {
	v := url.Values{"limit": {strconv.Itoa(limit)}}
	if reason != "" {
		v.Set("reason", reason)
	}
	if group != "" {
		v.Set("group", group)
	}
	return paths.WithQuery(paths.QueueMessages(b, vhost, q), v)
}

var ranges = []string{"1h", "6h", "24h", "7d"}

// limits are the browse sizes offered; any 1…500 can be typed.
var limits = []int{20, 50, 100, 200, 500}

func itoa(n int) string { return strconv.Itoa(n) }

func i64(n int64) string { return strconv.FormatInt(n, 10) }

// rate formats messages per second: "—" for zero, one decimal below 100.
func rate(r float64) string {
	switch {
	case r == 0:
		return "—"
	case r < 100:
		return strconv.FormatFloat(r, 'f', 1, 64) + "/s"
	default:
		return strconv.FormatFloat(r, 'f', 0, 64) + "/s"
	}
}

func rateKey(r float64) string { return strconv.FormatFloat(r, 'f', 3, 64) }

// filterText is what the queue filter matches besides the visible text.
func filterText(q QueueRow) string {
	s := q.Vhost
	if q.DLQ {
		s += " dlq dead-letter"
	}
	if q.Retry {
		s += " retry"
	}
	if q.Growing {
		s += " growing"
	}
	if q.CountsUnknown || q.ConsumersUnknown {
		s += " unreported"
	}
	return s
}

func reasonLabel(r string) string {
	if r == "" {
		return "no dead-letter headers"
	}
	return r
}

// dlqTone flags dead letters held; with some dead-letter queues not counted, none held is not
// known to be fine.
func dlqTone(p BrokerPage) string {
	switch {
	case p.DLQMessages > 0:
		return components.ToneDanger
	case p.DLQUnknown > 0:
		return ""
	}
	return components.ToneOK
}

// dlqCaption is the dead-letter queues card's caption: the messages in them and their inflow,
// neither adding the queues whose counts were not reported as 0 — "at least" what the others
// hold, or "not reported" when none was counted.
func dlqCaption(p BrokerPage) string {
	switch {
	case p.DLQUnknown == 0:
		return components.FormatNum(p.DLQMessages) + " messages in them · inflow " + rate(p.DLQInflow)
	case p.DLQUnknown == p.DLQs:
		return "messages in them not reported · inflow unknown"
	}
	s := "at least " + components.FormatNum(p.DLQMessages) + " messages in them (" + itoa(p.DLQUnknown) + " not reported) · inflow "
	if p.DLQInflow == 0 {
		return s + "unknown"
	}
	return s + "at least " + rate(p.DLQInflow)
}

// growingCaption is the growing card's caption: while the broker reports no counts, growth is as
// last counted.
func growingCaption(p BrokerPage) string {
	if p.StatsNotice != "" {
		return "as last counted: no counts are reported now"
	}
	return "ready or unacked rising at every recent sample"
}

// unreportedHint is a stat card's caption for a count not known: not reported, and what the last
// sample that had the counts said (of picks the card's count).
func unreportedHint(q QueueRow, of func(Counted) int64) string {
	if q.LastCounted == nil {
		return "not reported"
	}
	return "not reported · " + components.FormatNum(of(*q.LastCounted)) + " when last counted, " +
		components.FormatAge(q.LastCounted.Ago) + " ago"
}

// showDeadLetterHeld: the queue page has a card for the dead letters a quorum queue keeps for
// at-least-once dead-lettering, when it dead-letters so or holds some.
func showDeadLetterHeld(q QueueRow) bool {
	return q.DeadLetterStrategy == "at-least-once" || q.DeadLetterHeld > 0
}

// deadLetterHeldText is the queue list's marker of dead letters held for dead-lettering.
func deadLetterHeldText(q QueueRow) string {
	return "held for dead-lettering: " + components.FormatNum(q.DeadLetterHeld)
}

// deadLetterHeldWhy explains DeadLetterHeld.
const deadLetterHeldWhy = "Dead letters this quorum queue keeps until a queue its dead-letter exchange routes them to " +
	"confirms them (at-least-once dead-lettering): counted in its messages, not in ready or unacked, and toward max-length. " +
	"They stay while no queue takes them: check the dead-letter exchange's bindings."

func growTone(n int) string {
	if n > 0 {
		return components.ToneWarn
	}
	return ""
}

// readyText is the ready card's caption: how long a dead-letter queue has held messages, when
// the samples say; for counts not known, what was last counted.
func readyText(q QueueRow) string {
	if q.CountsUnknown {
		return unreportedHint(q, func(c Counted) int64 { return c.Ready })
	}
	if q.DLQ && q.HeldFor > 0 {
		return "dead letters held for " + components.FormatAge(q.HeldFor)
	}
	return "waiting for a consumer"
}

// unackedText is the unacked card's caption.
func unackedText(q QueueRow) string {
	if q.CountsUnknown {
		return unreportedHint(q, func(c Counted) int64 { return c.Unacked })
	}
	return "delivered, not yet acknowledged"
}

// heldTone flags dead letters held for dead-lettering: no queue has confirmed them yet.
func heldTone(n int64) string {
	if n > 0 {
		return components.ToneWarn
	}
	return ""
}

// consumersTone flags a queue with messages waiting and nobody to take them (a dead-letter queue
// usually has no consumer: that is not flagged).
func consumersTone(q QueueRow) string {
	if q.Consumers == 0 && q.Ready > 0 && !q.DLQ && !q.ConsumersUnknown && !q.CountsUnknown {
		return components.ToneWarn
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func brokerSubtitle(p BrokerPage) string {
	s := "Queues sampled in the background, growing ones first"
	if !p.MultiVhost && p.Vhost != "" {
		s = "vhost " + p.Vhost + " · " + s
	}
	return s
}

// filterHint says which of the page's filters narrow the messages shown.
// unfilteredURL is the messages page of p without its CEL filter (the other filters kept).
func unfilteredURL(p MessagesPage) string {
	q := url.Values{"limit": {strconv.Itoa(p.Limit)}}
	for k, v := range map[string]string{"reason": p.Reason, "exception": p.Exception, "group": p.Group} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return paths.WithQuery(paths.QueueMessages(p.Broker, p.Vhost, p.Queue), q)
}

func filterHint(p MessagesPage) string {
	var parts []string
	if p.Reason != "" {
		parts = append(parts, "reason "+p.Reason)
	}
	if p.Exception != "" {
		parts = append(parts, "exception containing “"+p.Exception+"”")
	}
	if p.Group != "" {
		parts = append(parts, "error group "+p.Group)
	}
	if len(parts) == 0 {
		return "no filter"
	}
	return strings.Join(parts, ", ")
}

// rawURL is where message m of the page is whole, read as the page was: the messages API's browse
// of the queue's head down to m, narrowed by the page's filters, or, for a message the browse moved
// to Redrive's archive, the archive API of the queue. Where a page that cut a part of m for
// display points.
func rawURL(p MessagesPage, m MessageView) string {
	if m.Kept {
		return paths.WithQuery(paths.APIArchive, url.Values{"broker": {p.Broker}, "queue": {p.Queue}})
	}
	v := url.Values{"limit": {strconv.Itoa(m.Position + 1)}}
	for k, f := range map[string]string{"reason": p.Reason, "exception": p.Exception, "group": p.Group} {
		if f != "" {
			v.Set(k, f)
		}
	}
	if p.Revealed {
		v.Set("reveal", "true")
	}
	return paths.WithQuery(paths.APIQueueMessages(p.Broker, p.Vhost, p.Queue), v)
}

// archiveURL is the archive page narrowed to a queue: what discard jobs and custody took from it.
func archiveURL(broker, queue string) string {
	return paths.WithQuery(paths.Archive, url.Values{"broker": {broker}, "queue": {queue}})
}

// deliveriesText is a message's delivery count for the table: "deliveries: 3 · 16 left", or
// "deliveries: 3" when the queue has no limit.
func deliveriesText(m MessageView) string {
	s := "deliveries: " + i64(m.DeliveryCount)
	if m.DeliveriesLeft >= 0 {
		s += " · " + i64(m.DeliveriesLeft) + " left"
	}
	return s
}

// deliveriesTitle explains deliveriesText.
func deliveriesTitle(m MessageView) string {
	s := i64(m.DeliveryCount) + " deliveries counted before this browse (x-delivery-count); this browse counted one more"
	if m.DeliveriesLeft >= 0 {
		s += "; " + i64(m.DeliveriesLeft) + " more before RabbitMQ drops or dead-letters it"
	}
	return s
}

// keptSummary is the line above the table when a browse moved messages to the archive.
func keptSummary(n int) string {
	if n == 1 {
		return "1 message had fewer than 2 deliveries left and was moved to Redrive's archive"
	}
	return itoa(n) + " messages had fewer than 2 deliveries left and were moved to Redrive's archive"
}

func keptPronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// showDeliveries: the table has a Deliveries column for quorum queues, which count deliveries.
func showDeliveries(p MessagesPage) bool { return p.Type == "quorum" }

// columns is how many columns the messages table has, for a detail row to span.
func columns(p MessagesPage) int {
	if showDeliveries(p) {
		return 9
	}
	return 8
}

// revealURL is the page again with reveal=true (an admin's audited look at masked values).
func revealURL(p MessagesPage) string {
	return paths.Reveal("limit", strconv.Itoa(p.Limit), "reason", p.Reason, "exception", p.Exception, "group", p.Group)
}

// inflowTone flags dead letters arriving now.
func inflowTone(r float64) string {
	if r > 0 {
		return components.ToneDanger
	}
	return ""
}

// FilterExamples are offered in a queue page's filter box: variable names and common shapes.
var FilterExamples = []string{
	`dead_letter.reason == "rejected"`,
	`dead_letter.count > 3`,
	`body.orderId == "ord-100"`,
	`headers["x-exception-message"].contains("timeout")`,
	`properties.message_id == "evt-000007"`,
	`routing_key.startsWith("order.")`,
}

// timeKey is an optional time's sort key (components.TimeSortKey); "" (sorted last) for none.
func timeKey(t *time.Time) string {
	if t == nil {
		return ""
	}
	return components.TimeSortKey(*t)
}

// canPlan reports whether the page offers plans of its queue's messages: to an operator, of a
// queue that can be a replay's source.
func canPlan(p MessagesPage) bool { return p.Meta.CanOperate && p.NoPlan == "" }
