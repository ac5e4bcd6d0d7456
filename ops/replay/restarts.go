package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/source"
)

// A RabbitMQ node that crashes before it writes a finished job's acks to disk returns the acked
// messages when it starts again: after the job's last sweep, so nothing of the job removes them
// (AMQP acks are not confirmed; a consumer cannot wait for them to be durable). WatchRestarts
// notices a node that started again (its start, now less its uptime, moved later; or it was up
// for less than restartWindow when first seen) and tidies each RabbitMQ job of that broker that finished in the
// restartWindow before: the copies its ledger names, and only those, are planned
// (DropReplayedCopy, by their message ids) and run as a job of Tidier's, audited like any other.
// A copy is byte-identical to what the job moved (its locator holds the body's fingerprint): a
// filter by id also selects any other message under the same id, which the plan then publishes, so
// such a plan — one that would move anything else — is left to an operator, as are copies without
// a message id a filter can name; the messages page shows them.

// restartWindow is how long before a node's start a finished job is looked at again.
const restartWindow = 15 * time.Minute

// Tidier is who starts the jobs that remove the copies a restart returned.
var Tidier = access.Actor{Name: "redrive", Role: access.Operator}

// NodeWatcher is what WatchRestarts needs of a broker; *rabbit.Broker implements it.
type NodeWatcher interface {
	NodeUptimes(ctx context.Context) (map[string]time.Duration, error)
}

// WatchRestarts looks at the brokers' nodes every Options.RestartPoll until ctx ends.
func (e *Engine) WatchRestarts(ctx context.Context) {
	seen := map[string]map[string]time.Time{} // broker → node → when it started, as of the last look
	for {
		for name, b := range e.rabbit {
			if w, ok := b.(NodeWatcher); ok {
				e.lookAtNodes(ctx, name, w, seen)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(e.o.RestartPoll):
		}
	}
}

// startJitter absorbs the request's own time in a start computed as now less the uptime.
const startJitter = 2 * time.Second

// lookAtNodes tidies after every node of broker that started again since the last look: one whose
// start (now less its uptime) is later than the start seen then.
func (e *Engine) lookAtNodes(ctx context.Context, broker string, w NodeWatcher, seen map[string]map[string]time.Time) {
	ups, err := w.NodeUptimes(ctx)
	if err != nil {
		return // the broker is away: looked at when it answers, its nodes' uptimes then say whether they restarted
	}
	now := time.Now()
	starts := make(map[string]time.Time, len(ups))
	for node, up := range ups {
		started := now.Add(-up)
		starts[node] = started
		last, known := seen[broker][node]
		if known && !started.After(last.Add(startJitter)) || !known && up > restartWindow {
			if known {
				starts[node] = last // the first estimate stays the reference: the jitter does not add up
			}
			continue // up all along, or (first seen) up since before any job it could matter to
		}
		if err := e.tidyAfter(ctx, broker, node, started); err != nil {
			// Once per restart: the messages page still shows the copies, and a plan removes them.
			e.o.Logger.Warn("replay: copies a RabbitMQ restart may have returned are not tidied; plan the queue to remove them",
				"broker", broker, "node", node, "err", err)
		}
	}
	seen[broker] = starts
}

// tidyAfter tidies the RabbitMQ jobs of broker that finished in the restartWindow before started.
func (e *Engine) tidyAfter(ctx context.Context, broker, node string, started time.Time) error {
	jobs, err := e.o.Store.Jobs(ctx, 200)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.FinishedAt == nil || !j.FinishedAt.Before(started) || j.FinishedAt.Before(started.Add(-restartWindow)) {
			continue
		}
		if err := e.tidyJob(ctx, broker, node, started, j); err != nil {
			return err
		}
	}
	return nil
}

// tidyJob plans and starts the removal of the copies of job's messages that its queue holds again.
func (e *Engine) tidyJob(ctx context.Context, broker, node string, started time.Time, job Job) error {
	plan, err := e.LoadPlan(ctx, job.PlanID)
	if err != nil {
		return err
	}
	src := plan.Source
	if src.Kind != source.RabbitMQ || src.Broker != broker || !src.dropsReplayedCopies() {
		return nil
	}
	b := e.rabbit[broker]
	span := min(max(src.Span, src.Limit), rabbitmodel.MaxPeek)
	var msgs []rabbitmodel.Message
	if _, err := b.Peek(ctx, src.Vhost, src.Queue, span, func(m rabbitmodel.Message) { msgs = append(msgs, m) }); err != nil {
		return err
	}
	copies, err := e.ReplayedCopies(ctx, broker, src.Vhost, src.Queue, msgs)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var ids []string
	for i, by := range copies {
		// An id a filter cannot name (NUL, not UTF-8) is left with the copies without one.
		if id := msgs[i].MessageID; by == job.ID && id != "" && !unusable(id) && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	tidy := Source{Kind: source.RabbitMQ, Action: src.Action, Broker: broker, Vhost: src.Vhost, Queue: src.Queue, Limit: span}
	p, err := e.Plan(ctx, Tidier.Name, tidy, Filter{MessageIDs: ids})
	if err != nil {
		return err
	}
	if p.Counts[DropReplayedCopy] == 0 || p.Counts[Publish] > 0 || p.Counts[Discard] > 0 {
		return nil // something else would move: an operator's to decide
	}
	_, err = e.Start(ctx, StartRequest{PlanID: p.ID, Actor: Tidier, Reason: fmt.Sprintf(
		"RabbitMQ node %s started again at %s, after job %s finished: it returned %d message(s) that job had acked; their copies are removed",
		node, started.UTC().Format(time.RFC3339), job.ID, p.Counts[DropReplayedCopy])})
	return err
}
