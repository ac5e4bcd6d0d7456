package replay

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"strings"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/search"
	"github.com/redrive/redrive/ops/source"
)

// RabbitBroker is what replay needs of a broker; *rabbit.Broker implements it (cmd/console
// checks at compile time).
type RabbitBroker interface {
	Name() string
	Peek(ctx context.Context, vhost, queue string, limit int, each func(rabbitmodel.Message)) (rabbitmodel.BrowseResult, error)
	// ReplayCursor opens a cursor on queue for a replay job (the adapter's OpenCursor: it takes
	// the queue's turn and holds it until it closes).
	ReplayCursor(ctx context.Context, vhost, queue string, span int) (rabbitmodel.Cursor, error)
	// Router reads vhost's bindings once and returns route, which lists the queues a message
	// published to exchange with routingKey reaches through them (exact false: every queue bound to
	// an exchange that routes by what cannot be seen).
	Router(ctx context.Context, vhost string) (route func(exchange, routingKey string) (queues []string, exact bool), err error)
	// ArchivedHeaders reads an archived message's headers (rabbitmodel.Whole.Headers, as the
	// adapter encoded them) back with their AMQP types.
	ArchivedHeaders(wire []byte) (map[string]any, error)
	// DeadLetterOf is the dead-letter metadata in a message's headers; nil when they say nothing
	// of a death.
	DeadLetterOf(headers map[string]any) *rabbitmodel.DeadLetter
}

// rabbitLocator names a dead-lettered message instance: its id and a fingerprint of its body (the
// first 8 bytes of the body's SHA-256, hex) — or, without an id, its body's hash and a fingerprint
// of the rest of it (rabbitmodel.Message.Envelope: two commands of one body sent apart are two
// messages, of which a discard archives each, not one and the other as its copy) — and how often
// Redrive replayed it, so the same message dying again after a replay is a new instance. Only a
// byte-identical copy (what a broker returns after it lost an ack) has its original's locator (a
// message a restore put back from the archive is not one: its mark makes it an instance of its own);
// another message under the same id is an instance of its own, which a plan does not take for a
// copy (the consumer's inbox, asked at plan and at run time, still keeps one id from being
// applied twice). The body is hashed whole: see rabbitmodel.Message.BodyDigest.
func rabbitLocator(broker, vhost, queue string, m rabbitmodel.Message) string {
	sum, _ := m.BodyDigest() // Peek and the cursor hold whole bodies; ReplayedCopies skips the rest
	key := escapeBytes(m.MessageID)
	if key == "" {
		key = "sha256:" + hex.EncodeToString(sum[:12])
		if m.Envelope != ([32]byte{}) {
			key += "+" + hex.EncodeToString(m.Envelope[:8])
		}
	} else {
		key += "~" + hex.EncodeToString(sum[:8])
	}
	count := 0
	if m.DeadLetter != nil {
		count = m.DeadLetter.ReplayCount
	}
	l := fmt.Sprintf("rabbitmq:%s/%s/%s/%s#%d", broker, vhost, queue, key, count)
	if m.RestoredFrom != "" {
		// Restored from the archive (rabbitmodel.HeaderRestoredFrom): a dead letter in the queue again,
		// not a copy of the one the archive holds, whose discard still holds its locator.
		l += "@" + escapeBytes(m.RestoredFrom)
	}
	return l
}

// LocatorMasked is a locator as a reader who may not see message ids reads it: a RabbitMQ
// locator names its dead letter by its id (rabbitLocator), here replaced by mask; id is the
// message id of the item or ledger row the locator is of. The locator itself, which the ledger
// keys on, is never changed; Kafka, outbox and archive locators hold no content.
func LocatorMasked(locator, id, mask string) string {
	if id == "" || !strings.HasPrefix(strings.TrimPrefix(locator, discardPrefix), "rabbitmq:") {
		return locator
	}
	key := "/" + escapeBytes(id) + "~"
	for i := 0; ; {
		j := strings.Index(locator[i:], key)
		if j < 0 {
			return locator
		}
		start, end := i+j+1, i+j+len(key)-1 // the id, between "/" and "~"
		if fingerprinted(locator[end+1:]) {
			return locator[:start] + mask + locator[end:]
		}
		i += j + 1
	}
}

// fingerprinted reports whether s begins with what follows the id in a locator: the body's
// fingerprint (16 hex digits) and "#".
func fingerprinted(s string) bool {
	if len(s) < 17 || s[16] != '#' {
		return false
	}
	for _, c := range s[:16] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// ReplayedCopies says which of the messages browsed from a RabbitMQ dead-letter queue a job
// already holds in its ledger (published or archived, or being so), by their index in ms, naming
// the job: copies a broker returned after it lost the job's acks, which a plan of the queue drops
// (DropReplayedCopy). A browse's messages are recognized whether or not their body was cut for
// the page, since the fingerprint is of the whole body (taken before the cut); a Message whose
// body was cut without one (BodyDigest not ok: not read by the rabbit package) is never marked
// a copy — better one copy shown unmarked than another message marked as one.
func (e *Engine) ReplayedCopies(ctx context.Context, broker, vhost, queue string, ms []rabbitmodel.Message) (map[int]string, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	locators := make([]string, 0, 2*len(ms)) // as a replay and as a discard knows each one
	index := make([]int, 0, len(ms))         // ms's index of each pair
	for i, m := range ms {
		if _, ok := m.BodyDigest(); !ok {
			continue
		}
		l := rabbitLocator(broker, vhost, queue, m)
		locators = append(locators, l, discardLocator(l))
		index = append(index, i)
	}
	if len(locators) == 0 {
		return nil, nil
	}
	holders, err := e.o.Store.Holders(ctx, locators)
	if err != nil || len(holders) == 0 {
		return nil, err
	}
	out := make(map[int]string, len(holders))
	for k, i := range index {
		if j := cmp.Or(holders[locators[2*k]], holders[locators[2*k+1]]); j != "" {
			out[i] = j
		}
	}
	return out, nil
}

// rabbitKind replays from a RabbitMQ dead-letter queue: a plan browses the queue's head, a job
// reads the same span again and moves the planned messages.
type rabbitKind struct{ e *Engine }

func (rabbitKind) batch() int { return rabbitBatch }

// rabbitBatch is smaller than batchSize: a RabbitMQ batch is read, published and confirmed while
// the next one is gated, and smaller batches keep both busy.
const rabbitBatch = 1000

func (k rabbitKind) broker(src *Source) (RabbitBroker, error) {
	r, err := configured(k.e.rabbit, "source.broker", "rabbitmq broker", src.Broker)
	if err != nil {
		return nil, err
	}
	if src.Vhost == "" {
		src.Vhost = "/"
	}
	return r, nil
}

// plan reads the first Limit messages of the queue without disturbing it (a browse), emits each
// selected one as an item and records in src.Span how many messages it read: the job reads that
// far. A browse that cannot see every message (consumers hold some unacknowledged) is refused,
// never frozen as a partial plan.
func (k rabbitKind) plan(ctx context.Context, src *Source, f Filter, emit func(Item) error) error {
	r, err := k.broker(src)
	if err != nil {
		return err
	}
	if src.Queue == "" {
		return invalid("source.queue", "required")
	}
	if src.Limit < 1 || src.Limit > rabbitmodel.MaxPeek {
		return invalid("source.limit", fmt.Sprintf("must be between 1 and %d", rabbitmodel.MaxPeek))
	}
	cel, err := compileCEL(search.RabbitMQ, f.CEL)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var emitErr error
	read := 0
	consumers := k.e.rabbitConsumers(r, src.Broker, src.Vhost)
	res, err := r.Peek(ctx, src.Vhost, src.Queue, src.Limit, func(m rabbitmodel.Message) {
		read++
		if emitErr != nil {
			return
		}
		if ok, err := matchRabbit(ctx, f, cel, m); err != nil || !ok {
			emitErr = err
			return
		}
		it := k.e.rabbitItem(*src, m)
		if seen[it.Locator] {
			return // a duplicate copy is handled as its first instance
		}
		seen[it.Locator] = true
		if it.Consumer == "" && src.Destination == nil && !src.discards() && (m.DeadLetter == nil || m.DeadLetter.OriginalQueue == "") {
			if it.Consumer, emitErr = consumers.byRoute(ctx, it.Destination); emitErr != nil {
				return
			}
		}
		if ed := src.Edit; ed != nil {
			if ed.Diff, emitErr = rabbitEditDiff(m, ed); emitErr != nil {
				return
			}
			if view := f.shown.Rabbit; view != nil {
				shown := view(m)
				markMasked(ed.Diff, rabbitHeaderValues(m.Headers), rabbitHeaderValues(shown.Headers), m.MessageID, shown.MessageID)
			}
		}
		emitErr = emit(it)
	})
	if err != nil {
		return err
	}
	if res.Type == rabbitmodel.TypeStream {
		// A stream keeps what it is sent: a job's consumer starts at its next message, not where
		// the plan read, and an ack removes nothing — every item would end failed or be "moved"
		// while it stays.
		return fmt.Errorf("%w: queue %s is a stream: a stream keeps its messages (read by offset; an ack removes nothing), "+
			"so a replay or a discard cannot take them out of it; read it on its page, or replay from a classic or quorum "+
			"dead-letter queue", ops.ErrConflict, src.Queue)
	}
	if !res.Complete {
		return fmt.Errorf("%w: queue %s cannot be read whole now (%d message(s) held unacknowledged, %d other consumer(s): "+
			"a live consumer or a running replay job), so a plan would miss some; stop them or wait for the job, then plan again",
			ops.ErrConflict, src.Queue, res.Unacked, res.Consumers)
	}
	src.Span = read
	return emitErr
}

// matchRabbit reports whether a plan's filter (cel, its CEL compiled) selects m, judged on what
// the planner's actor may see of it (Filter.view): the x-death reason and the time as they are,
// the rest — error group, message id, CEL — by its content as shown, as a search's filter is.
func matchRabbit(ctx context.Context, f Filter, cel *search.Filter, m rabbitmodel.Message) (bool, error) {
	var reason string
	if dl := m.DeadLetter; dl != nil {
		reason = dl.Reason
	}
	if f.Reason != "" && reason != f.Reason {
		return false, nil
	}
	if ts := m.Properties.Timestamp; ts != nil && !f.matchTime(*ts) {
		return false, nil
	}
	shown := m
	if view := f.view.Rabbit; view != nil && (f.ExceptionType != "" || len(f.MessageIDs) > 0 || cel != nil) {
		shown = view(m)
	}
	var exception, stack string
	if dl := shown.DeadLetter; dl != nil {
		exception, stack = dl.ExceptionMessage, dl.Stacktrace
	}
	if !ops.InErrorGroupTraced(exception, stack, f.ExceptionType) || !f.matchShownID(m.MessageID, shown.MessageID) {
		return false, nil
	}
	if cel != nil {
		return cel.MatchRabbit(ctx, shown)
	}
	return true, nil
}

// rabbitHeaderValues is each header's last value, by name.
func rabbitHeaderValues(hs []rabbitmodel.Header) map[string]string {
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		out[h.Key] = h.Value
	}
	return out
}

// rabbitItem is the item of a message the plan's filter selected.
func (e *Engine) rabbitItem(src Source, m rabbitmodel.Message) Item {
	dl := m.DeadLetter
	var reason, exception, origQueue, stack string
	if dl != nil {
		reason, exception, origQueue, stack = dl.Reason, dl.ExceptionMessage, dl.OriginalQueue, dl.Stacktrace
	}
	if shown := e.o.ShownRabbit; shown != nil && exception != "" {
		if sd := shown(m).DeadLetter; sd != nil {
			exception = sd.ExceptionMessage // the group quotes no more than the message shows
		}
	}
	it := Item{Locator: rabbitLocator(src.Broker, src.Vhost, src.Queue, m), MessageID: m.MessageID,
		ErrorGroup: strings.TrimSpace(reason + " " + ops.ErrorFingerprint(exception, stack)), diedIn: origQueue}
	if dl != nil {
		it.ReplayCount = dl.ReplayCount
		// Byte for byte: a key that is not UTF-8 is sent nowhere else (sanitize skips it as unresolvable).
		if x, rk := dl.Destination(); x != "" || rk != "" {
			it.Destination = Destination{Kind: source.RabbitMQ, Broker: src.Broker, Vhost: src.Vhost, Exchange: x, RoutingKey: rk}
		}
	}
	it.Consumer = e.consumerForQueue(src.Broker, src.Vhost, origQueue)
	if r := src.Destination; r != nil {
		// Redirected (checked against replay.allowed_destinations when planned). The default
		// exchange routes by queue name, so that queue's consumer's inbox guards it; through
		// another exchange the queues it reaches are not known here: unguarded (the plan warns).
		it.Destination = Destination{Kind: source.RabbitMQ, Broker: src.Broker, Vhost: src.Vhost, Exchange: r.Exchange, RoutingKey: r.RoutingKey}
		it.Consumer = ""
		if r.Exchange == "" {
			it.Consumer = e.consumerForQueue(src.Broker, src.Vhost, r.RoutingKey)
		}
	}
	if src.discards() {
		// A discard publishes nothing, so no inbox is asked; its ledger entries are its own
		// (a message replayed by one job may still be discarded by another).
		it.Locator, it.Consumer = discardLocator(it.Locator), ""
	}
	return it
}

// rabbitConsumerSet finds, for the dead letters of one broker and vhost that name no queue they
// died in, the consumer of the queue their original exchange and routing key lead to, asking the
// broker's bindings once per destination.
type rabbitConsumerSet struct {
	e             *Engine
	router        *rabbitRouter
	broker, vhost string
	byDest        map[[2]string]string
}

func (e *Engine) rabbitConsumers(r RabbitBroker, broker, vhost string) *rabbitConsumerSet {
	return &rabbitConsumerSet{e: e, router: &rabbitRouter{r: r, vhost: vhost}, broker: broker, vhost: vhost, byDest: map[[2]string]string{}}
}

// rabbitRouter routes a plan's destinations through a vhost's bindings as the broker had them
// when the first was asked: one reading of the bindings per plan, however many destinations.
type rabbitRouter struct {
	r     RabbitBroker
	vhost string
	route func(exchange, routingKey string) ([]string, bool)
	err   error
}

func (rr *rabbitRouter) routes(ctx context.Context, exchange, routingKey string) (queues []string, exact bool, err error) {
	if rr.route == nil && rr.err == nil {
		rr.route, rr.err = rr.r.Router(ctx, rr.vhost)
	}
	if rr.err != nil {
		return nil, false, rr.err
	}
	queues, exact = rr.route(exchange, routingKey)
	return queues, exact, nil
}

// byRoute is the consumer whose inbox guards a dead letter that names no queue it died in (no
// x-death, no x-first-death-queue) but where it was going, dest: Spring AMQP's
// RepublishMessageRecoverer publishes a failed message straight to a DLQ with x-original-exchange
// and x-original-routingKey and nothing else. Those are routed through the broker's bindings to
// the queues they reach, and the one configured consumer reading one of them is the consumer, as
// the queue of an x-death names it: a replay of the message reaches that queue. "" when the
// message names no destination, when no configured consumer reads where it leads, and when
// several do (one inbox cannot guard them all; the plan warns, as for any message without one).
func (c *rabbitConsumerSet) byRoute(ctx context.Context, dest Destination) (string, error) {
	if dest.Kind != source.RabbitMQ {
		return "", nil
	}
	key := [2]string{dest.Exchange, dest.RoutingKey}
	if consumer, ok := c.byDest[key]; ok {
		return consumer, nil
	}
	queues, _, err := c.router.routes(ctx, dest.Exchange, dest.RoutingKey)
	if err != nil {
		return "", err
	}
	found := ""
	for _, q := range queues {
		consumer := c.e.consumerForQueue(c.broker, c.vhost, q)
		if consumer == "" || consumer == found {
			continue
		}
		if found != "" {
			found = ""
			break
		}
		found = consumer
	}
	c.byDest[key] = found
	return found, nil
}

// discardLocator names a message a discard job archives.
func discardLocator(replayLocator string) string { return discardPrefix + replayLocator }

// isDiscardLocator reports whether l is a discard's (discardLocator).
func isDiscardLocator(l string) bool { return strings.HasPrefix(l, discardPrefix) }

// twinLocator is the locator the other action knows the same RabbitMQ dead letter by: a replay's
// for a discard's, a discard's for a replay's. A copy the broker returned after it lost a job's
// ack is held under one of the two; a plan or a job of the other action must not move it again —
// replay what a discard archived (the operator chose to drop it), or archive what a replay
// published.
func twinLocator(l string) string {
	if isDiscardLocator(l) {
		return strings.TrimPrefix(l, discardPrefix)
	}
	return discardLocator(l)
}

const discardPrefix = "discard:"

func (k rabbitKind) open(ctx context.Context, job Job, src Source) (mover, error) {
	r, err := k.broker(&src)
	if err != nil {
		return nil, err
	}
	span := src.Span
	if span < 1 { // a plan made before spans were recorded
		span = src.Limit
	}
	cur, err := r.ReplayCursor(ctx, src.Vhost, src.Queue, span)
	if err != nil {
		return nil, err
	}
	return &rabbitMover{e: k.e, src: src, cur: cur, stash: map[string]stashed{}}, nil
}

// rabbitMover reads the queue forward across a run's batches. Batches come in seq order, which is
// the order the plan met the messages in the queue, so each batch's messages are found by reading
// on: every message passed stays unacked (the queue keeps it) until it is moved, or until the
// cursor closes and returns it in place.
type rabbitMover struct {
	e     *Engine
	src   Source
	cur   rabbitmodel.Cursor
	stash map[string]stashed // planned messages read before their batch came, by locator
	// analyzed says the plan items' statistics were refreshed for this job's look-ups by locator
	// (sortOut): without them (the plan was copied in moments ago, long before autovacuum)
	// PostgreSQL reads the whole plan for each look-up. Refreshed on the first look-up, not when
	// the job opens: a queue that holds only the plan's messages, in its order, needs none, and an
	// ANALYZE is a tenth of the job's PostgreSQL time (docs/benchmarks.md).
	analyzed bool
}

type stashed struct {
	d   rabbitmodel.Delivery
	seq int
}

func (m *rabbitMover) close() { m.cur.Close() }

// finish reads the rest of the span once every item is settled and drops the copies of messages
// this job published: a crash between the ledger and the ack leaves such a copy in the queue, and
// when it hit the last batch the resumed run has nothing left to move that would meet it.
func (m *rabbitMover) finish(ctx context.Context, job Job) error {
	held := make([]rabbitmodel.Delivery, 0, len(m.stash))
	for _, s := range m.stash {
		held = append(held, s.d)
	}
	m.stash = map[string]stashed{}
	for {
		drop, err := m.sortOut(ctx, job, held, math.MaxInt) // nothing is a later batch's now
		if err != nil {
			return err
		}
		if len(drop) > 0 {
			if err := m.cur.Ack(drop); err != nil {
				return err
			}
		}
		if m.cur.Ended() {
			return nil
		}
		if held, err = m.cur.Take(ctx, rabbitChunk); err != nil {
			return err
		}
	}
}

// rabbitChunk is how many messages the mover reads between two plan look-ups.
const rabbitChunk = 1000

// rabbitReadAgain is how many times a move looks at the queue again (Cursor.ReadAgain) for planned
// messages it did not find, before it reports them not found: bounded, so that a queue that keeps
// receiving dead letters does not keep a job reading.
const rabbitReadAgain = 2

func (m *rabbitMover) locator(msg rabbitmodel.Message) string {
	l := rabbitLocator(m.src.Broker, m.src.Vhost, m.src.Queue, msg)
	if m.src.discards() {
		return discardLocator(l)
	}
	return l
}

// move finds the batch's messages in the queue, publishes them (mandatory, confirmed) and, after
// the ledger records them, acks their dead-letter copies. The order per message, whatever the
// batching: ledger claim (the gate, one statement per batch) → publish → broker confirm (awaited
// in the next stage, while the next batch is published: confirms are matched by delivery tag) →
// ledger settle (one statement per batch) → ack of the DLQ copy (one basic.ack(multiple) per batch
// where its tags run unbroken, rabbitmodel.Cursor.Ack). A kill before the confirm leaves the message
// in the DLQ (unacked, so the broker returns it) with the job's claim, which the resumed run
// publishes again (at least once: a copy it may have published first is the inbox's to absorb);
// between the ledger and the ack the DLQ copy comes back with the ledger saying published, and the
// resumed run drops it (sortOut, finish) instead of publishing it twice. Messages of the plan met on the way are
// handled by what the ledger says of them: a later batch's are kept aside for it; a copy of one
// this job already published (its ack was lost to a crash) is dropped, never sent twice; anything
// else stays in the queue.
func (m *rabbitMover) move(ctx context.Context, job Job, items []Item, resumed map[int]bool) (moved, error) {
	pending := make(map[string]Item, len(items))
	minSeq, maxSeq := items[0].Seq, items[0].Seq
	for _, it := range items {
		minSeq, maxSeq = min(minSeq, it.Seq), max(maxSeq, it.Seq)
	}
	var passed []rabbitmodel.Delivery
	for l, s := range m.stash {
		if s.seq < minSeq { // read ahead for an item the gate then skipped: sorted out below
			passed = append(passed, s.d)
			delete(m.stash, l)
		}
	}
	// Sized for the batch: every item is taken unless the queue no longer holds it.
	take, taken := make([]rabbitmodel.Delivery, 0, len(items)), make([]Item, 0, len(items))
	for _, it := range items {
		if s, ok := m.stash[it.Locator]; ok {
			take, taken = append(take, s.d), append(taken, it)
			delete(m.stash, it.Locator)
			continue
		}
		pending[it.Locator] = it
	}
	// What the gate skipped stays in the queue, but for the copies it recorded as dropped.
	drop, err := m.sortOut(ctx, job, passed, maxSeq)
	if err != nil {
		return moved{}, err
	}
	// readOn reads until the pending messages are found, the cursor ends or, unless past is set,
	// the cursor is past where they would be.
	readOn := func(past bool) error {
		for len(pending) > 0 && !m.cur.Ended() && (past || !m.behindStash(pending)) {
			ds, err := m.cur.Take(ctx, rabbitChunk)
			if err != nil {
				return err
			}
			var others []rabbitmodel.Delivery
			for _, d := range ds {
				l := m.locator(d.Message())
				if it, ok := pending[l]; ok {
					take, taken = append(take, d), append(taken, it)
					delete(pending, l)
					continue
				}
				others = append(others, d)
			}
			dropped, err := m.sortOut(ctx, job, others, maxSeq)
			if err != nil {
				return err
			}
			drop = append(drop, dropped...)
		}
		return nil
	}
	for round := 0; ; round++ {
		if err := readOn(round > 0); err != nil {
			return moved{}, err
		}
		if len(pending) == 0 {
			break
		}
		// Another consumer (a live one, or a reader the queue's turn does not keep out: another
		// console's browse while the console's database was away) may hold them unacked: not
		// "gone". It is asked now, not only when the job began: a reader that came since took its
		// share of the head, and the cursor met later messages first.
		others, err := m.cur.OthersNow(ctx)
		if err != nil {
			return moved{}, err
		}
		if others > 0 {
			return moved{}, &ops.Error{Kind: ops.ErrUnavailable, Message: fmt.Sprintf("waiting for another reader of queue %s: "+
				"%d planned message(s) are not where the job reads, and %d other consumer(s) may hold them unacknowledged "+
				"(a browse, a trace, another console or a live consumer); the job reads the queue again by itself",
				m.src.Queue, len(pending), others)}
		}
		// No other consumer now, none seen: a reader that cancels its consumer before it returns
		// what it held (a browse does: one nack after the cancel) holds messages no consumer counts
		// for a moment, and returns them ahead of where the cursor reads. The cursor looks again
		// after a pause and reads on over what became ready, past where they would have been.
		if round == rabbitReadAgain {
			break
		}
		if _, err := m.cur.ReadAgain(ctx); err != nil {
			return moved{}, err
		}
	}
	to := make([]rabbitmodel.Republish, len(take))
	for i, it := range taken {
		to[i] = rabbitmodel.Republish{Exchange: it.Destination.Exchange, RoutingKey: it.Destination.RoutingKey,
			Headers: m.e.headers.rabbit(take[i].Headers(), job, it, rabbitmodel.VhostName(m.src.Vhost, m.src.Queue))}
		if ed := m.src.Edit; ed != nil { // only the edited copy is ever published
			m.e.rabbitEdited(&to[i], ed, it.MessageID)
		}
	}
	out := moved{outcomes: make([]LedgerOutcome, 0, len(pending))}
	for _, it := range pending {
		out.outcomes = append(out.outcomes, LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID,
			Outcome: LedgerFailed, Detail: fmt.Sprintf("not found in the queue when the job ran (it read the %d messages "+
				"the plan had read, or the queue ran out): consumed, purged or expired since the plan", m.cur.Read())})
	}
	acks := drop
	if len(acks) > 0 {
		out.afterSettle = func(context.Context) error { return m.cur.Ack(acks) }
	}
	if len(take) == 0 {
		return out, nil
	}
	if m.src.discards() {
		return m.discard(ctx, job, taken, take, resumed, out, acks)
	}
	wait, err := m.cur.Send(ctx, take, to)
	if err != nil {
		return moved{}, err
	}
	// The confirms are awaited in the next stage, while the next batch is read and sent.
	out.await = func(ctx context.Context) ([]LedgerOutcome, error) {
		errs, err := wait(ctx)
		if err != nil {
			return nil, err
		}
		return m.settled(taken, take, errs, resumed, &acks), nil
	}
	out.afterSettle = func(context.Context) error { return m.cur.Ack(acks) }
	return out, nil
}

// discard archives the batch's messages whole in the store, in one transaction, and only then —
// once the ledger records them — acks them from the queue: archive → ledger → ack. A crash
// before the archive commits leaves them in the queue alone; after it, they are in both until the
// resumed job, which finds them in the queue again (their claims still its own), archives them
// again (a no-op: same job, same locator) and acks them; a crash after the ledger leaves a copy
// the resumed run drops (sortOut, finish). A message is thus never in neither place, and in both
// only until the job resumes.
func (m *rabbitMover) discard(ctx context.Context, job Job, taken []Item, take []rabbitmodel.Delivery,
	resumed map[int]bool, out moved, acks []rabbitmodel.Delivery) (moved, error) {
	rows := make([]Archived, 0, len(take))
	for i, d := range take {
		w, err := d.Whole()
		if err != nil {
			return moved{}, err
		}
		row := Archived{JobID: job.ID, Locator: taken[i].Locator, MessageID: d.Message().MessageID, Broker: m.src.Broker,
			Vhost: m.src.Vhost, Queue: m.src.Queue, Actor: job.Actor, Reason: job.Reason, Exchange: w.Exchange, RoutingKey: w.RoutingKey,
			Properties: rabbitmodel.PropertiesMap(w.Properties), Headers: w.HeadersJSON, HeadersWire: w.Headers, Body: w.Body}
		if dl := d.Message().DeadLetter; dl != nil {
			row.OriginalExchange = dl.OriginalExchange
			if len(dl.OriginalRoutingKeys) > 0 {
				row.OriginalRoutingKey = dl.OriginalRoutingKeys[0]
			}
		}
		rows = append(rows, row)
	}
	if err := m.e.o.Store.ArchiveMessages(ctx, rows); err != nil {
		return moved{}, err // the outcome is unknown to the ledger: the claims stay, the run is retried
	}
	acks = append(acks, take...)
	for _, it := range taken {
		o := LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Outcome: LedgerPublished,
			Detail: "archived, then acked from the queue"}
		if resumed[it.Seq] {
			o.Detail = "archived (again, after an interruption: one archive row), then acked from the queue"
		}
		out.outcomes = append(out.outcomes, o)
	}
	out.afterSettle = func(context.Context) error { return m.cur.Ack(acks) }
	return out, nil
}

// settled turns the broker's answers into ledger outcomes and adds the confirmed messages to acks.
func (m *rabbitMover) settled(taken []Item, take []rabbitmodel.Delivery, errs []error, resumed map[int]bool,
	acks *[]rabbitmodel.Delivery) []LedgerOutcome {
	outcomes := make([]LedgerOutcome, 0, len(taken))
	for i, it := range taken {
		o := LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Outcome: LedgerPublished}
		switch {
		case errs[i] != nil:
			o.Outcome, o.Detail = LedgerFailed, errs[i].Error()+"; the message stays in the dead-letter queue"
		case resumed[it.Seq]:
			o.Detail = "resumed after an interruption: may be a duplicate the consumer's inbox absorbs"
			*acks = append(*acks, take[i])
		default:
			*acks = append(*acks, take[i])
		}
		outcomes = append(outcomes, o)
	}
	return outcomes
}

// behindStash reports whether every pending message comes before a planned message already met:
// a queue hands messages out in order, so those pending ones are no longer in it.
func (m *rabbitMover) behindStash(pending map[string]Item) bool {
	if len(m.stash) == 0 {
		return false
	}
	first := -1
	for _, s := range m.stash {
		if first < 0 || s.seq < first {
			first = s.seq
		}
	}
	for _, it := range pending {
		if it.Seq > first {
			return false
		}
	}
	return true
}

// sortOut looks up messages met that the current batch is not moving: a later batch's planned
// messages are kept aside; copies of messages this job published are returned to be dropped; the
// rest stay.
func (m *rabbitMover) sortOut(ctx context.Context, job Job, ds []rabbitmodel.Delivery, maxSeq int) ([]rabbitmodel.Delivery, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	locators := make([]string, len(ds))
	for i, d := range ds {
		locators[i] = m.locator(d.Message())
	}
	if !m.analyzed {
		if err := m.e.o.Store.AnalyzePlanItems(ctx); err != nil {
			return nil, err
		}
		m.analyzed = true
	}
	rows, err := m.e.o.Store.PlanItemsByLocator(ctx, job.PlanID, locators)
	if err != nil || len(rows) == 0 {
		return nil, err // not planned: they stay
	}
	seqOf := make(map[string]int, len(rows))
	copies := map[int]bool{} // seqs planned as DropReplayedCopy
	for _, r := range rows {
		seqOf[r.Locator] = r.Seq
		if Action(r.Action) == DropReplayedCopy {
			copies[r.Seq] = true
		}
	}
	var earlier []int
	earlierAt := map[int][]rabbitmodel.Delivery{}
	for i, d := range ds {
		seq, ok := seqOf[locators[i]]
		switch {
		case !ok:
		case seq > maxSeq:
			if _, dup := m.stash[locators[i]]; !dup {
				m.stash[locators[i]] = stashed{d: d, seq: seq}
			}
		default:
			// A message of this batch's range or before it that is not being moved now: a copy of
			// one this job already published (its ack lost to a crash) is dropped, and so is one
			// planned as a copy of another job's confirmed replay once the gate has recorded it;
			// one the gate skipped otherwise, or a second copy of one being moved (its claim still
			// active), stays.
			if earlierAt[seq] == nil {
				earlier = append(earlier, seq)
			}
			earlierAt[seq] = append(earlierAt[seq], d)
		}
	}
	if len(earlier) == 0 {
		return nil, nil
	}
	outcomes, err := m.e.o.Store.LedgerOutcomes(ctx, job.ID, earlier)
	if err != nil {
		return nil, err
	}
	var drop []rabbitmodel.Delivery
	for _, seq := range earlier {
		if o := outcomes[seq]; o == LedgerPublished || o == LedgerSkipped && copies[seq] {
			drop = append(drop, earlierAt[seq]...)
		}
	}
	return drop, nil
}

// rabbitEditDiff checks an edit against the message it changes and says what changes
// (diffEdit); a body cut for display cannot be edited: nobody saw all of it.
func rabbitEditDiff(m rabbitmodel.Message, ed *Edit) (*EditDiff, error) {
	if ed.Value != nil && m.Truncated {
		return nil, invalid("edit.value", fmt.Sprintf("the message's body (%d bytes) is larger than a browse shows, so it cannot be "+
			"edited here; set or drop headers only, or fix it at the producer", m.Size))
	}
	have := map[string]string{}
	for _, h := range m.Headers {
		have[h.Key] = h.Value
	}
	d, err := diffEdit(m.Body, have, ed, "body")
	if err != nil {
		return nil, err
	}
	if ed.FreshID != "" {
		d.MessageID = &[2]string{escapeBytes(m.MessageID), ed.FreshID}
	}
	return d, nil
}

// rabbitEdited applies an edit to a message about to be published: its body and its headers
// (set ones as strings) but Redrive's own. Under a new message id the message_id property (which
// the rules read first) and any id header it has carry it, and HeaderOriginalMessageID the id
// it died with.
func (e *Engine) rabbitEdited(to *rabbitmodel.Republish, ed *Edit, originalID string) {
	if ed.Value != nil {
		to.Body = []byte(*ed.Value)
	}
	for _, k := range ed.DropHeaders {
		delete(to.Headers, k)
	}
	for k, v := range ed.SetHeaders {
		to.Headers[k] = v
	}
	if ed.FreshID == "" {
		return
	}
	to.MessageID = ed.FreshID
	for _, n := range e.o.MessageIDs.Headers {
		for k := range to.Headers {
			if strings.EqualFold(k, n) {
				to.Headers[k] = ed.FreshID
			}
		}
	}
	to.Headers[HeaderOriginalMessageID] = originalID
}
