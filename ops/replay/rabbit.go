package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
	"golang.org/x/time/rate"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/store"
)

// RabbitBroker is what replay needs of a broker; *rabbit.Broker implements it.
type RabbitBroker interface {
	Name() string
	Peek(ctx context.Context, vhost, queue string, limit int, each func(rabbit.Message)) (rabbit.BrowseResult, error)
	Redrive(ctx context.Context, vhost, queue string, o rabbit.RedriveOptions,
		decide func(context.Context, rabbit.RedriveBatch) ([]rabbit.Move, error),
		settle func(context.Context, rabbit.RedriveBatch, []rabbit.Move, []error) error) error
}

// rabbitLocator names a dead-lettered message instance: its id (or its body's hash) and how often
// Redrive replayed it, so the same message dying again after a replay is a new instance.
func rabbitLocator(broker, vhost, queue string, m rabbit.Message) string {
	key := m.MessageID
	if key == "" {
		sum := sha256.Sum256(m.Body)
		key = "sha256:" + hex.EncodeToString(sum[:12])
	}
	count := 0
	if m.DeadLetter != nil {
		count = m.DeadLetter.ReplayCount
	}
	return fmt.Sprintf("rabbitmq:%s/%s/%s/%s#%d", broker, vhost, queue, key, count)
}

// planRabbit reads the first Limit messages of the queue without disturbing it (a browse) and
// emits each as an item.
func (e *Engine) planRabbit(ctx context.Context, src Source, f Filter, emit func(Item) error) error {
	r, ok := e.rabbit[src.Broker]
	if !ok {
		return fmt.Errorf("rabbitmq broker %q is not configured: %w", src.Broker, ops.ErrNotFound)
	}
	if src.Vhost == "" {
		src.Vhost = "/"
	}
	if src.Queue == "" {
		return invalid("source.queue", "required")
	}
	if src.Limit < 1 || src.Limit > rabbit.MaxPeek {
		return invalid("source.limit", fmt.Sprintf("must be between 1 and %d", rabbit.MaxPeek))
	}
	seen := map[string]bool{}
	var emitErr error
	_, err := r.Peek(ctx, src.Vhost, src.Queue, src.Limit, func(m rabbit.Message) {
		it, ok := e.rabbitItem(src, f, m)
		if !ok || seen[it.Locator] || emitErr != nil {
			return // a duplicate copy is handled as its first instance
		}
		seen[it.Locator] = true
		emitErr = emit(it)
	})
	if err != nil {
		return err
	}
	return emitErr
}

func (e *Engine) rabbitItem(src Source, f Filter, m rabbit.Message) (Item, bool) {
	dl := m.DeadLetter
	var reason, exception, origQueue string
	if dl != nil {
		reason, exception, origQueue = dl.Reason, dl.ExceptionMessage, dl.OriginalQueue
	}
	if (f.Reason != "" && reason != f.Reason) || (f.ExceptionType != "" && !strings.Contains(exception, f.ExceptionType)) ||
		!f.matchIDs(m.MessageID) {
		return Item{}, false
	}
	if ts := m.Properties.Timestamp; ts != nil && !f.matchTime(*ts) {
		return Item{}, false
	}
	it := Item{Locator: rabbitLocator(src.Broker, src.Vhost, src.Queue, m), MessageID: m.MessageID,
		ErrorGroup: strings.TrimSpace(reason + " " + firstLineOf(exception))}
	if dl != nil {
		it.ReplayCount = dl.ReplayCount
		if dl.OriginalExchange != "" || len(dl.OriginalRoutingKeys) > 0 {
			rk := ""
			if len(dl.OriginalRoutingKeys) > 0 {
				rk = dl.OriginalRoutingKeys[0]
			}
			if dl.OriginalExchange != "" || rk != "" {
				it.Destination = Destination{Kind: "rabbitmq", Broker: src.Broker, Vhost: src.Vhost,
					Exchange: dl.OriginalExchange, RoutingKey: rk}
			}
		}
	}
	it.Consumer = e.consumerForQueue(src.Broker, src.Vhost, origQueue)
	return it, true
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

type rabbitRunner struct {
	e   *Engine
	r   RabbitBroker
	src Source
}

func (r *rabbitRunner) move(context.Context, store.ReplayJob, []Item, map[int]bool) ([]store.LedgerOutcome, error) {
	return nil, fmt.Errorf("rabbitmq jobs run whole (runAll)")
}

// runAll drains the DLQ once: each message that is a planned item is gated (inbox, ledger claim)
// and published, confirmed, settled and only then acked; every other message is returned in order.
// Plan items not met in the queue are settled failed at the end. Nothing of the plan is held in
// memory: each batch looks its messages up in the plan and the ledger by locator, and only the
// messages being moved are remembered until they are settled.
func (r *rabbitRunner) runAll(ctx context.Context, job store.ReplayJob, renew func() (stop bool)) error {
	vhost := r.src.Vhost
	if vhost == "" {
		vhost = "/"
	}
	locator := func(m rabbit.Message) string { return rabbitLocator(r.src.Broker, vhost, r.src.Queue, m) }
	if err := r.e.o.Store.AnalyzePlanItems(ctx); err != nil {
		return err
	}
	dec := newItemDecoder()
	// decide (for batch n+1) and settle (for batch n) run concurrently: inflight, guarded by mu,
	// keeps a second copy of a message being moved from being moved too.
	var mu sync.Mutex
	inflight := map[string]Item{} // by locator
	stopped := false
	batch := min(rabbitBatch, max(1, job.RatePerSecond))
	limiter := rate.NewLimiter(rate.Limit(job.RatePerSecond), batch)

	decide := func(ctx context.Context, b rabbit.RedriveBatch) ([]rabbit.Move, error) {
		if renew() {
			stopped = true
			return nil, errStopped
		}
		moves := make([]rabbit.Move, len(b.Messages)) // zero value: Keep
		locators := make([]string, len(b.Messages))
		for i, m := range b.Messages {
			locators[i] = locator(m)
		}
		rows, err := r.e.o.Store.PlanItemsByLocator(ctx, job.PlanID, locators)
		if err != nil || len(rows) == 0 {
			return moves, err // none of these was selected: all stay
		}
		items := make(map[string]Item, len(rows))
		seqs := make([]int, len(rows))
		for i, row := range rows {
			items[row.Locator] = dec.item(row)
			seqs[i] = row.Seq
		}
		outcomes, err := r.e.o.Store.LedgerOutcomes(ctx, job.ID, seqs)
		if err != nil {
			return nil, err
		}
		var planned []Item
		idx := map[int]int{} // seq → index in the batch
		mu.Lock()
		for i := range b.Messages {
			it, ok := items[locators[i]]
			_, moving := inflight[locators[i]]
			_, dup := idx[it.Seq]
			switch {
			case !ok, dup, moving:
				continue // not selected, or another copy is being moved: it stays
			case outcomes[it.Seq] == store.LedgerPublished:
				// A copy of a message this job published and whose ack was lost (a crash, a
				// broken channel): the broker put it back; it must not go out twice.
				moves[i] = rabbit.Move{Kind: rabbit.Drop}
				continue
			case outcomes[it.Seq] == store.LedgerSkipped, outcomes[it.Seq] == store.LedgerFailed:
				continue // settled earlier: it stays
			}
			planned = append(planned, it) // new, or claimed by an interrupted run (the gate resumes it)
			idx[it.Seq] = i
		}
		mu.Unlock()
		if len(planned) == 0 {
			return moves, nil
		}
		if err := limiter.WaitN(ctx, min(len(planned), batch)); err != nil {
			return nil, err
		}
		g, err := r.e.gate(ctx, job, planned)
		if err != nil {
			return nil, err
		}
		// Settled by an earlier run of this job meanwhile: a copy whose publish was confirmed but
		// whose ack was lost is dropped, never published twice.
		if len(g.mine) > 0 {
			if outcomes, err = r.e.o.Store.LedgerOutcomes(ctx, job.ID, seqsOf(g.mine)); err != nil {
				return nil, err
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, it := range g.move {
			i := idx[it.Seq]
			inflight[it.Locator] = it
			moves[i] = rabbit.Move{Kind: rabbit.Publish, Exchange: it.Destination.Exchange, RoutingKey: it.Destination.RoutingKey,
				Headers: rabbitReplayHeaders(b.Headers[i], r.e.strip, job, it, r.src)}
		}
		for _, it := range g.mine {
			if outcomes[it.Seq] == store.LedgerPublished {
				moves[idx[it.Seq]] = rabbit.Move{Kind: rabbit.Drop}
			}
		}
		return moves, nil
	}
	settle := func(ctx context.Context, b rabbit.RedriveBatch, moves []rabbit.Move, errs []error) error {
		var out []store.LedgerOutcome
		var settled []string
		mu.Lock()
		for i, m := range moves {
			if m.Kind != rabbit.Publish {
				continue
			}
			l := locator(b.Messages[i])
			it, ok := inflight[l]
			if !ok { // decide registers every message it publishes; anything else is a bug, not a seq 0
				mu.Unlock()
				return fmt.Errorf("replay %s: settling %s, which this run did not move", job.ID, l)
			}
			o := store.LedgerOutcome{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Outcome: store.LedgerPublished}
			if errs[i] != nil {
				o.Outcome, o.Detail = store.LedgerFailed, errs[i].Error()+"; the message stays in the dead-letter queue"
			}
			out = append(out, o)
			settled = append(settled, l)
		}
		mu.Unlock()
		if err := r.e.o.Store.Settle(ctx, job.ID, out); err != nil {
			return err
		}
		mu.Lock()
		for _, l := range settled { // only now: a copy seen meanwhile stayed rather than raced the ledger
			delete(inflight, l)
		}
		mu.Unlock()
		return nil
	}
	done := func() bool {
		j, err := r.e.o.Store.Job(ctx, job.ID)
		return err == nil && j.Published+j.Skipped+j.Failed >= j.Total
	}
	err := r.r.Redrive(ctx, vhost, r.src.Queue, rabbit.RedriveOptions{Max: 2*job.Total + 1000, Batch: batch, Done: done}, decide, settle)
	if stopped {
		return errStopped
	}
	if err != nil {
		return err
	}
	// What the plan froze but the queue no longer holds (consumed, purged, expired meanwhile).
	_, err = r.e.o.Store.RecordUnsettled(ctx, job.ID, job.PlanID, "not found in the queue when the job ran")
	return err
}

func seqsOf(items []Item) []int {
	out := make([]int, len(items))
	for i, it := range items {
		out[i] = it.Seq
	}
	return out
}

// rabbitReplayHeaders drops the failed attempt's exception headers and the broker's x-death
// (the message starts a new life), and adds Redrive's own.
func rabbitReplayHeaders(in amqp.Table, strip headerStripper, job store.ReplayJob, it Item, src Source) amqp.Table {
	out := amqp.Table{}
	for k, v := range in {
		lk := strings.ToLower(k)
		if strip.strips(k) || lk == "x-death" || strings.HasPrefix(lk, "x-first-death-") || strings.HasPrefix(lk, "x-last-death-") {
			continue
		}
		out[k] = v
	}
	out[HeaderReplayID] = job.ID
	out[HeaderReplayCount] = strconv.Itoa(it.ReplayCount + 1)
	out[HeaderReplayedBy] = job.Actor
	out[HeaderSource] = fmt.Sprintf("%s/%s", src.Vhost, src.Queue)
	return out
}

// rabbitBatch is smaller than batchSize: a RabbitMQ job overlaps taking and deciding one batch
// with publishing the previous one, and smaller batches keep both stages busy.
const rabbitBatch = 1000
