package replay

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/source"
)

// planChunk is how many messages a plan resolves and stores per round trip.
const planChunk = 5000

// planBuilder streams a selection into a stored plan. A reader goroutine turns the source's
// messages into items and hands them over in chunks, while the builder looks up each chunk's
// ledger and inbox verdicts (batched, = ANY), decides its actions and copies it to the store:
// the broker is read while PostgreSQL works. Only the counts, the first items and what the
// warnings need stay in memory.
type planBuilder struct {
	e    *Engine
	plan *Plan
	w    PlanWriter
	warn *warningCounter
	// routes, for a RabbitMQ plan, the other queues its publishes reach (nil otherwise).
	routes *rabbitRoutes
	// unguarded counts the publishes without an inbox verdict, for every kind.
	unguarded unguardedCounter
	dests     map[Destination]json.RawMessage // a plan's destinations repeat: marshal each once
	// progress, when set, is told after each chunk how many messages are planned and their counts
	// (a copy: the planning's heartbeat writes it to the store).
	progress func(planned int, counts map[Action]int)
}

func (b *planBuilder) run(ctx context.Context, read func(context.Context, func(Item) error) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan []Item, 1)
	readErr := make(chan error, 1)
	go func() {
		defer close(chunks)
		var chunk []Item
		total := 0
		err := read(ctx, func(it Item) error {
			if total++; total > MaxPlanItems {
				return invalid("source", fmt.Sprintf("selects more than %d messages; narrow the selection or the filter", MaxPlanItems))
			}
			if chunk = append(chunk, it); len(chunk) == planChunk {
				select {
				case chunks <- chunk:
				case <-ctx.Done():
					return ctx.Err()
				}
				chunk = make([]Item, 0, planChunk)
			}
			return nil
		})
		if err == nil && len(chunk) > 0 {
			select {
			case chunks <- chunk:
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		readErr <- err
	}()
	for chunk := range chunks {
		if err := b.add(ctx, chunk); err != nil {
			cancel()
			for range chunks { // let the reader end
			}
			return err
		}
	}
	return <-readErr
}

// add decides and stores one chunk.
func (b *planBuilder) add(ctx context.Context, items []Item) error {
	// A RabbitMQ dead letter is looked up under both its locators: a copy of one a discard
	// archived is not replayed, nor a copy of one a replay published archived (twinLocator).
	twins := b.plan.Source.Kind == source.RabbitMQ
	locators := make([]string, 0, 2*len(items))
	for i := range items {
		sanitize(&items[i])
		locators = append(locators, items[i].Locator)
		if twins {
			locators = append(locators, twinLocator(items[i].Locator))
		}
	}
	replayed, err := b.w.ReplayedLocators(ctx, locators)
	if err != nil {
		return err
	}
	discard := b.plan.Source.discards()
	var verdicts map[string]map[string]inbox.Verdict
	if !discard { // a discard publishes nothing: what a consumer processed does not matter
		verdicts, _ = b.e.inboxVerdicts(ctx, items, false)
	}
	p := b.plan
	rows := make([]StoredItem, len(items))
	for i := range items {
		it := &items[i]
		it.Seq = p.Total
		p.Total++
		if v, ok := verdicts[it.Consumer][it.MessageID]; ok {
			it.Inbox = v
		} else {
			it.Inbox = inbox.Unknown
		}
		held := replayed[it.Locator]
		if twins {
			held = cmp.Or(held, replayed[twinLocator(it.Locator)])
		}
		if held != "" && p.Source.Kind == source.Archive {
			// Another job took this dead letter between the archive's check (RestoreRefused) and
			// this look-up: refused, so no plan is left behind to say it.
			what := "is being restored by another replay job"
			if held == LedgerPublished {
				what = "was restored already by another replay job"
			}
			return ops.Conflict("archived message %d %s (the ledger holds it); see its row in the archive", p.Source.ArchiveID, what)
		}
		switch it.Action = decide(it, held != "", b.e.o.Replay.MaxReplaysPerMessage); {
		case held == LedgerPublished && (discard || it.Action == SkipAlreadyReplayed) && b.plan.Source.dropsReplayedCopies():
			// Published (confirmed) or archived by another job, so this copy is the only thing
			// left to tidy; one in flight is that job's to settle and stays. Only a byte-identical
			// copy has a held locator: a message restored from the archive into its queue carries
			// rabbitmodel.HeaderRestoredFrom, which its locator includes (rabbitLocator), so it is never
			// taken for a copy of what the archive holds — it is discarded (archived again) or
			// replayed like any dead letter, and a restore never feeds a silent drop.
			it.Action = DropReplayedCopy
		case discard && held != "":
			it.Action = SkipAlreadyReplayed // being archived by another job
		case discard:
			it.Action = Discard
		}
		p.Counts[it.Action]++
		if p.ErrorGroups[it.ErrorGroup] == nil {
			p.ErrorGroups[it.ErrorGroup] = map[Action]int{}
		}
		p.ErrorGroups[it.ErrorGroup][it.Action]++
		if len(p.Items) < MaxPlanItemsShown {
			p.Items = append(p.Items, *it)
		}
		rows[i] = StoredItem{Seq: it.Seq, Locator: it.Locator, MessageID: it.MessageID, Consumer: it.Consumer,
			Destination: b.destJSON(it.Destination), Inbox: string(it.Inbox), Action: string(it.Action),
			ErrorGroup: it.ErrorGroup, ReplayCount: it.ReplayCount, Position: it.Position, Partition: it.Partition, Note: it.Note}
	}
	b.warn.add(ctx, items)
	b.routes.add(ctx, items)
	b.unguarded.add(items)
	if err := b.w.Add(ctx, rows); err != nil {
		return err
	}
	if b.progress != nil {
		b.progress(p.Total, maps.Clone(p.Counts))
	}
	return nil
}

// warnings are the plan's warnings: the Kafka groups or the other RabbitMQ queues it reaches, then
// its unguarded messages.
func (b *planBuilder) warnings() []string {
	none := "no configured consumer reads their destination"
	if src := b.plan.Source; src.Kind == source.Outbox {
		none = b.e.outboxUnguarded(src.Outbox)
	}
	return append(append(b.warn.warnings(), b.routes.warnings()...), b.unguarded.warningsWhy(func(c string) bool { _, ok := b.e.inboxes[c]; return ok }, none)...)
}

// outboxUnguarded says why an outbox's replayed events have no consumer to guard them.
func (e *Engine) outboxUnguarded(name string) string {
	r, ok := e.o.OutboxRelays[name]
	switch {
	case !ok:
		return fmt.Sprintf("where outbox %s's relay publishes is not configured (outboxes[].relay_to), so no consumer's inbox is asked", name)
	case r.Cluster != "":
		return fmt.Sprintf("no one configured consumer reads topic %s on %s, where outbox %s's relay publishes", r.Topic, r.Cluster, name)
	default:
		return fmt.Sprintf("no configured consumer reads queue %s on %s, where outbox %s's relay publishes", r.Queue, r.Broker, name)
	}
}

func (b *planBuilder) destJSON(d Destination) json.RawMessage {
	if b.dests == nil {
		b.dests = map[Destination]json.RawMessage{}
	}
	raw, ok := b.dests[d]
	if !ok {
		raw = mustJSON(d)
		b.dests[d] = raw
	}
	return raw
}

// warningCounter gathers, chunk by chunk, what a Kafka plan's warnings say: which other consumer
// groups read the topics the plan publishes to, and what their inboxes say of those messages.
type warningCounter struct {
	e       *Engine
	cluster string
	enabled bool
	targets map[string]map[string]bool // topic → consumers the plan's items resolved to
	groups  map[string][]string        // topic → groups reading it (asked once per plan)
	// topic → group → verdict counts over the plan's publishes to the topic that belong to
	// another consumer than the group's; nil map: the group's inbox could not be read.
	counts map[string]map[string]map[inbox.Verdict]int
}

func newWarningCounter(ctx context.Context, e *Engine, src Source) *warningCounter {
	w := &warningCounter{e: e, cluster: src.Cluster, enabled: src.Kind == source.Kafka && e.o.GroupsByTopic != nil,
		targets: map[string]map[string]bool{}, counts: map[string]map[string]map[inbox.Verdict]int{}}
	if w.enabled {
		w.groups = e.o.GroupsByTopic(ctx, src.Cluster)
	}
	return w
}

func (w *warningCounter) add(ctx context.Context, items []Item) {
	if !w.enabled {
		return
	}
	idsFor := map[string]map[string][]string{} // topic → other group → message ids
	for _, it := range items {
		topic := it.Destination.Topic
		if it.Action != Publish || topic == "" {
			continue
		}
		if w.targets[topic] == nil {
			w.targets[topic] = map[string]bool{}
			w.counts[topic] = map[string]map[inbox.Verdict]int{}
		}
		w.targets[topic][it.Consumer] = true
		for _, group := range w.groups[topic] {
			if c := w.e.consumerForGroup(w.cluster, group); c != it.Consumer && it.MessageID != "" {
				if idsFor[topic] == nil {
					idsFor[topic] = map[string][]string{}
				}
				idsFor[topic][group] = append(idsFor[topic][group], it.MessageID)
			}
		}
	}
	for topic, byGroup := range idsFor {
		for group, ids := range byGroup {
			in, ok := w.e.inboxes[w.e.consumerForGroup(w.cluster, group)]
			if !ok {
				continue
			}
			counts, seen := w.counts[topic][group]
			if seen && counts == nil {
				continue // unreadable before
			}
			v, err := in.Verdicts(ctx, ids)
			if err != nil {
				w.counts[topic][group] = nil
				continue
			}
			if counts == nil {
				counts = map[inbox.Verdict]int{}
				w.counts[topic][group] = counts
			}
			for _, verdict := range v {
				counts[verdict]++
			}
		}
	}
}

// warnings names the other consumer groups a Kafka replay reaches, with their inbox verdicts.
func (w *warningCounter) warnings() []string {
	var out []string
	for topic, consumers := range w.targets {
		for _, group := range w.groups[topic] {
			consumer := w.e.consumerForGroup(w.cluster, group)
			if consumers[consumer] && consumer != "" {
				continue
			}
			msg := fmt.Sprintf("consumer group %s also reads %s and will receive the replayed messages", group, topic)
			counts, seen := w.counts[topic][group]
			switch _, hasInbox := w.e.inboxes[consumer]; {
			case !hasInbox:
				msg += " (no inbox configured for it: its verdicts are unknown)"
			case seen && counts == nil:
				msg += " (its inbox could not be read)"
			default:
				msg = fmt.Sprintf("%s; its inbox (%s): %d processed, %d in progress, %d not processed", msg, consumer,
					counts[inbox.Processed], counts[inbox.InProgress], counts[inbox.NotProcessed])
			}
			out = append(out, msg)
		}
	}
	sort.Strings(out)
	return out
}

// unguardedCounter counts, per consumer, the messages a plan of any kind publishes with no inbox
// verdict (inbox.Unknown): nothing stops a replay from applying their effect twice.
type unguardedCounter struct {
	counts map[string]int // consumer ("" when none is known) → unguarded publishes
	order  []string
}

func (u *unguardedCounter) add(items []Item) {
	for _, it := range items {
		if it.Action != Publish || it.Inbox != inbox.Unknown {
			continue
		}
		if u.counts == nil {
			u.counts = map[string]int{}
		}
		if _, ok := u.counts[it.Consumer]; !ok {
			u.order = append(u.order, it.Consumer)
		}
		u.counts[it.Consumer]++
	}
}

// warnings says, per consumer, how many messages go out unguarded and why: hasInbox tells a
// configured inbox (then unreadable) from none.
func (u *unguardedCounter) warnings(hasInbox func(consumer string) bool) []string {
	return u.warningsWhy(hasInbox, "no configured consumer reads their destination")
}

// warningsWhy is warnings with none, the reason given for the messages no consumer is known for.
func (u *unguardedCounter) warningsWhy(hasInbox func(consumer string) bool, none string) []string {
	consumers := append([]string(nil), u.order...)
	sort.Strings(consumers)
	out := make([]string, 0, len(consumers))
	for _, c := range consumers {
		n := u.counts[c]
		msgs := fmt.Sprintf("%d message(s)", n)
		switch {
		case c == "":
			out = append(out, fmt.Sprintf("%s will be published without an idempotency check (inbox: unknown): %s", msgs, none))
		case hasInbox(c):
			out = append(out, fmt.Sprintf("%s for consumer %s will be published without an idempotency check (inbox: unknown): its inbox could not be read", msgs, c))
		default:
			out = append(out, fmt.Sprintf("%s for consumer %s will be published without an idempotency check (inbox: unknown): no inbox is configured for it", msgs, c))
		}
	}
	return out
}
