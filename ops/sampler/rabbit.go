package sampler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/lease"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// RabbitTopology is what the sampler needs of a RabbitMQ broker; *rabbit.Broker implements it.
// Topology lists the queues (one management call) with exchanges and bindings; its errors carry
// the ops kinds (ErrUnavailable when the broker cannot be reached).
type RabbitTopology interface {
	Name() string
	Topology(ctx context.Context) (rabbitmodel.Topology, error)
}

// RabbitSource is one RabbitMQ broker to sample.
type RabbitSource struct {
	Broker RabbitTopology // required
}

// GrowthSamples is how many consecutive samples a queue's ready or unacked count must have risen
// across (every step up, GrowthSamples−1 steps, all within GrowthSamples intervals) for the
// queue to be marked growing.
const GrowthSamples = 4

// rabbitPart is the Sampler's RabbitMQ side. The brokers' windows are touched only under
// Sampler.tickMu, the caches only under Sampler.cacheMu.
type rabbitPart struct {
	brokers []*rabbitState // config order
	byName  map[string]*rabbitState
	cache   map[string]cached[queues.Snapshot]
	history map[queueHistoryKey]cached[[]history.RabbitQueuePoint]
}

type queueHistoryKey struct {
	broker, vhost, queue string
	span                 time.Duration
	maxPoints            int
}

// rabbitState is the leader's memory of one broker: each queue's last few depths.
type rabbitState struct {
	src    RabbitSource
	name   string
	keep   time.Duration // how far back depths are kept: GrowthSamples intervals
	warm   bool          // the windows were loaded from the store since leadership was taken
	token  int64         // the lease token the windows were loaded under
	lastAt time.Time     // newest sample stored, so that history keys stay unique
	depths map[rabbitmodel.QueueRef][]depth
	// dlqs follow what leaves each dead-letter queue; stored in the snapshot, so that a loss
	// outlives a restart or a change of leader. A dead-letter queue that vanished keeps its track
	// (deletedAt set) while the loss it left is counted.
	dlqs map[rabbitmodel.QueueRef]dlqTrack
	// counted is each queue's last counts the broker reported (queues.Queue.LastCounted), kept
	// while it reports none.
	counted map[rabbitmodel.QueueRef]queues.Counted
}

// dlqTrack is what the sampler follows of one dead-letter queue from sample to sample: the last
// sample's depth and Redrive's moves out of it then (based: both known), the loss counted in the
// current episode, and since when it holds messages.
type dlqTrack struct {
	based bool
	at    time.Time // the sample depth and moved are from
	depth int64     // ready + unacked
	moved int64     // Redrive's moves out of the queue, all jobs, as counted at that sample
	// credit is what Redrive's jobs counted in the last interval beyond the fall of the depth: a
	// job counts a message before it acks it, and the management API reports the depth late, so
	// those departures show in the next interval. It never exceeds one interval's moves.
	credit            int64
	lost              int64
	lostSince, lostAt time.Time
	// heldSince is the first sample of the run holding messages (depth above 0) that followed one
	// that found the queue empty (wasEmpty); zero while it is empty, and for a run that no sample
	// saw begin (the queue held messages when first sampled): "since" is then unknown, not the
	// first sample's time.
	heldSince time.Time
	wasEmpty  bool
	// deletedAt is the first sample that did not find the queue (zero while it is there); held
	// is what it held then that Redrive had not moved: lost with it, counted in lost.
	deletedAt time.Time
	held      int64
}

type depth struct {
	at             time.Time
	ready, unacked int64
	ack            float64 // the broker's ack rate then, a second
	// moved is Redrive's moves out of the queue so far, as counted then (rabbitMoved), and took
	// how many of them since the sample before; -1 when unknown (the store could not say, or the
	// sample was loaded from history).
	moved, took int64
}

func (p *rabbitPart) init(sources []RabbitSource, interval time.Duration) error {
	p.byName = map[string]*rabbitState{}
	p.cache = map[string]cached[queues.Snapshot]{}
	p.history = map[queueHistoryKey]cached[[]history.RabbitQueuePoint]{}
	for i, src := range sources {
		if src.Broker == nil {
			return ops.Invalid(fmt.Sprintf("rabbitmq[%d]", i), "broker is required")
		}
		name := src.Broker.Name()
		if _, dup := p.byName[name]; dup {
			return ops.Invalid(fmt.Sprintf("rabbitmq[%d].name", i), fmt.Sprintf("%q is used twice", name))
		}
		st := &rabbitState{src: src, name: name, keep: GrowthSamples * interval, depths: map[rabbitmodel.QueueRef][]depth{},
			dlqs: map[rabbitmodel.QueueRef]dlqTrack{}, counted: map[rabbitmodel.QueueRef]queues.Counted{}}
		p.brokers = append(p.brokers, st)
		p.byName[name] = st
	}
	return nil
}

// sampleRabbit samples one broker at now and stores the result.
// Its writes carry l's fencing token.
func (s *Sampler) sampleRabbit(ctx context.Context, st *rabbitState, l lease.Lease, now time.Time) (err error) {
	start := time.Now()
	defer func() { s.observe(rabbitSourceName(st.name), start, err) }()
	at := now.Round(0).Truncate(time.Microsecond) // what the store keeps

	if st.token != l.Token { // leadership (re)taken: another replica may have sampled meanwhile
		st.warm, st.token = false, l.Token
	}
	if !st.warm {
		s.warmRabbit(ctx, st, at)
	}
	topo, err := st.src.Broker.Topology(ctx)
	if err != nil {
		return s.failedSample(ctx, l, history.SnapshotRabbit, st.name, at, err, s.rememberRabbitError)
	}

	// Read after the topology: a job counts a message before it acks it, so every departure the
	// topology shows is counted by then.
	moved := s.rabbitMoved(ctx, st.name)
	snap, rows := st.observe(topo, at, moved)
	data, err := encodeRabbit(snap, st.dlqs)
	if err != nil {
		return fmt.Errorf("sampler: rabbitmq %s: %w", st.name, err)
	}
	w := history.SampleWrite{Snapshot: history.Snapshot{Kind: history.SnapshotRabbit, Name: st.name, At: at, Data: data}}
	fresh := at.After(st.lastAt) // else the clock did not move: history already has this instant
	if fresh {
		w.Rabbit = rows
	}
	if err := s.write(ctx, l, w); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	s.rememberRabbit(snap)
	if fresh {
		st.lastAt = at
	}
	return nil
}

// rabbitMoved is Redrive's moves out of each queue of broker so far; nil when the store cannot
// say (logged), and then no loss is counted across this sample.
func (s *Sampler) rabbitMoved(ctx context.Context, broker string) map[rabbitmodel.QueueRef]int64 {
	rows, err := s.store.RabbitMoved(ctx, broker)
	if err != nil {
		s.log.Warn("sampler: cannot read what replay jobs moved; dead letters lost meanwhile are not counted", "broker", broker, "err", err)
		return nil
	}
	moved := make(map[rabbitmodel.QueueRef]int64, len(rows))
	for _, r := range rows {
		moved[rabbitmodel.QueueRef{Vhost: r.Vhost, Name: r.Queue}] += r.Messages
	}
	return moved
}

// warmRabbit loads the recent depths from the store when this replica has just become leader, so
// that a queue growing under the previous leader is still marked growing. A failed load is logged;
// growth then needs GrowthSamples fresh samples.
func (s *Sampler) warmRabbit(ctx context.Context, st *rabbitState, at time.Time) {
	st.warm = true
	st.depths = map[rabbitmodel.QueueRef][]depth{}
	st.lastAt = time.Time{}
	st.dlqs = map[rabbitmodel.QueueRef]dlqTrack{}
	st.counted = map[rabbitmodel.QueueRef]queues.Counted{}
	if row, err := s.store.SnapshotIfChanged(ctx, history.SnapshotRabbit, st.name, time.Time{}); err == nil {
		if st.dlqs, err = decodeTracks(row.Data, row.At); err != nil {
			s.log.Warn("sampler: cannot read the dead-letter queues' losses from the last snapshot; they are counted afresh", "broker", st.name, "err", err)
		}
		st.counted = decodeCounted(row.Data, row.At)
	} else if !errors.Is(err, ops.ErrNotFound) {
		s.log.Warn("sampler: cannot load the last snapshot; dead-letter queues' losses are counted afresh", "broker", st.name, "err", err)
	}
	rows, err := s.store.RabbitQueueSamples(ctx, st.name, at.Add(-st.keep))
	if err != nil {
		s.log.Warn("sampler: cannot load recent queue samples; growth detection starts afresh", "broker", st.name, "err", err)
		return
	}
	for _, r := range rows {
		ref := rabbitmodel.QueueRef{Vhost: r.Vhost, Name: r.Queue}
		st.depths[ref] = append(st.depths[ref], depth{at: r.At, ready: r.Ready, unacked: r.Unacked, ack: r.AckRate, moved: -1, took: -1})
		if r.At.After(st.lastAt) {
			st.lastAt = r.At
		}
	}
}

// observe turns one topology into the snapshot and the history rows, and moves the depth windows
// and the dead-letter queues' tracks on (moved: Redrive's moves so far, nil when unknown). Queues
// that vanished leave the windows; a dead-letter queue that vanished holding dead letters leaves
// its loss (snap.Gone). A queue whose counts the broker did not report (CountsUnreported) adds
// nothing to its window, no history row and no loss: its growth is the last known one, and its
// track starts afresh at the next sample that has counts.
func (st *rabbitState) observe(t rabbitmodel.Topology, at time.Time, moved map[rabbitmodel.QueueRef]int64) (queues.Snapshot, []history.RabbitQueueSample) {
	cutoff := at.Add(-st.keep)
	snap := queues.Snapshot{Broker: st.name, At: at, Queues: make([]queues.Queue, len(t.Queues)),
		Edges: t.Edges, RetryLoops: t.RetryLoops}
	if snap.Edges == nil {
		snap.Edges = []rabbitmodel.Edge{}
	}
	if snap.RetryLoops == nil {
		snap.RetryLoops = []rabbitmodel.RetryLoop{}
	}
	rows := make([]history.RabbitQueueSample, 0, len(t.Queues))
	depths := make(map[rabbitmodel.QueueRef][]depth, len(t.Queues))
	dlqs := make(map[rabbitmodel.QueueRef]dlqTrack)
	counted := make(map[rabbitmodel.QueueRef]queues.Counted, len(t.Queues))
	listed := make(map[rabbitmodel.QueueRef]bool, len(t.Queues))
	for i, q := range t.Queues {
		ref := q.Ref()
		listed[ref] = true
		known := !q.CountsUnreported
		w := st.depths[ref]
		j := 0
		for j < len(w) && w[j].at.Before(cutoff) {
			j++
		}
		w = w[j:]
		if n := len(w); n > 0 && !w[n-1].at.Before(at) {
			w = w[:n-1] // the same instant sampled again: the newer reading wins
		}
		rq := queues.Queue{Queue: q, Retry: t.RetryQueues[ref]}
		if known {
			counted[ref] = queues.Counted{At: at, Ready: q.Ready, Unacked: q.Unacked}
		} else if c, ok := st.counted[ref]; ok {
			counted[ref], rq.LastCounted = c, c
		}
		d := depth{at: at, ready: q.Ready, unacked: q.Unacked, ack: q.AckRate, moved: -1, took: -1}
		if moved != nil {
			d.moved = moved[ref]
			if n := len(w); n > 0 && w[n-1].moved >= 0 {
				d.took = max(0, d.moved-w[n-1].moved) // a deleted job lowers the sum
			}
		}
		if q.IsDeadLetterQueue && !rq.Retry {
			tr := st.dlqs[ref]
			if !tr.deletedAt.IsZero() { // declared again: the loss goes on, the counting starts afresh
				tr = dlqTrack{lost: tr.lost, lostSince: tr.lostSince, lostAt: tr.lostAt, at: tr.at}
			}
			if known {
				tr = tr.next(at, cutoff, q.Ready+q.Unacked, moved, ref)
			} else {
				tr = tr.unknown(at)
			}
			dlqs[ref] = tr
			rq.Lost, rq.LostSince, rq.LostAt, rq.HeldSince = tr.lost, tr.lostSince, tr.lostAt, tr.heldSince
		}
		if known {
			w = append(w, d)
			if len(w) > GrowthSamples {
				w = w[len(w)-GrowthSamples:]
			}
		}
		if len(w) > 0 {
			// A compact copy, so the windows do not keep growing arrays alive.
			depths[ref] = append([]depth(nil), w...)
		}

		rq.Growing, rq.Growth = growth(w) // from reported counts only: the last known growth while none are
		if known {
			rq.Inflow = max(q.PublishRate, depthInflow(w))
			rows = append(rows, history.RabbitQueueSample{Broker: st.name, Vhost: q.Vhost, Queue: q.Name, At: at, Ready: q.Ready,
				Unacked: q.Unacked, Consumers: int(q.Consumers), PublishRate: q.PublishRate, DeliverRate: q.DeliverRate,
				AckRate: q.AckRate, RedeliverRate: q.RedeliverRate})
		}
		snap.Queues[i] = rq
	}
	// Dead-letter queues no longer listed: what one held at the last sample, less what Redrive
	// moved out since, went with it.
	for ref, tr := range st.dlqs {
		if _, ok := dlqs[ref]; ok {
			continue
		}
		if tr.deletedAt.IsZero() {
			if listed[ref] {
				continue // still there, no longer a dead-letter queue: its track goes, as before
			}
			tr = tr.vanished(at, moved, ref)
		}
		if tr.lost > 0 && at.Sub(tr.lostAt) < queues.LostWindow {
			dlqs[ref] = tr
			snap.Gone = append(snap.Gone, queues.GoneQueue{Vhost: ref.Vhost, Name: ref.Name, DeletedAt: tr.deletedAt,
				Held: tr.held, Lost: tr.lost, LostSince: tr.lostSince, LostAt: tr.lostAt})
		}
	}
	sort.Slice(snap.Gone, func(i, j int) bool {
		a, b := snap.Gone[i], snap.Gone[j]
		if a.Vhost != b.Vhost {
			return a.Vhost < b.Vhost
		}
		return a.Name < b.Name
	})
	st.depths, st.dlqs, st.counted = depths, dlqs, counted
	sort.SliceStable(snap.Queues, func(i, j int) bool { // Queue() searches by (vhost, name)
		a, b := snap.Queues[i], snap.Queues[j]
		if a.Vhost != b.Vhost {
			return a.Vhost < b.Vhost
		}
		return a.Name < b.Name
	})
	return snap, rows
}

// next is the track after a sample at at found the queue ref at depth (ready + unacked), with
// moved Redrive's moves so far (nil: unknown). What the depth fell since the last sample beyond
// what Redrive's jobs took out (and the credit of the interval before) is lost: the broker or
// someone else took it. The episode ends queues.LostWindow after its last loss. An empty sample
// taken before cutoff (the sampler was down, or a restarted console read an old snapshot) bounds
// no arrival: messages found after it are held since nobody knows when.
func (tr dlqTrack) next(at, cutoff time.Time, depth int64, moved map[rabbitmodel.QueueRef]int64, ref rabbitmodel.QueueRef) dlqTrack {
	if tr.based && !tr.at.Before(at) {
		return tr // the same instant sampled again
	}
	if moved == nil {
		tr.based, tr.credit = false, 0 // the next sample starts afresh
	} else {
		m := moved[ref]
		if tr.based {
			fall := tr.depth - depth
			took := max(0, m-tr.moved) // a deleted job lowers the sum: nothing moved, then
			explained := took + tr.credit
			if lost := fall - explained; lost > 0 {
				if tr.lost == 0 {
					tr.lostSince = tr.at // they were still there then
				}
				tr.lost += lost
				tr.lostAt = at
			}
			tr.credit = min(took, max(0, explained-max(0, fall)))
		}
		tr.based, tr.depth, tr.moved = true, depth, m
	}
	switch {
	case depth <= 0:
		tr.heldSince = time.Time{}
	case tr.wasEmpty && !tr.at.Before(cutoff): // tr.at: the sample before this one
		tr.heldSince = at
	}
	tr.at, tr.wasEmpty = at, depth <= 0
	if tr.lost > 0 && at.Sub(tr.lostAt) >= queues.LostWindow {
		tr.lost, tr.lostSince, tr.lostAt = 0, time.Time{}, time.Time{}
	}
	return tr
}

// unknown is the track after a sample at at that had no counts for the queue: nothing is compared
// with them, so the next sample with counts starts afresh (what left meanwhile is not counted);
// since when it holds messages stays as the last counts said. The loss still ends
// queues.LostWindow after its last.
func (tr dlqTrack) unknown(at time.Time) dlqTrack {
	tr.based, tr.credit = false, 0
	if tr.lost > 0 && at.Sub(tr.lostAt) >= queues.LostWindow {
		tr.lost, tr.lostSince, tr.lostAt = 0, time.Time{}, time.Time{}
	}
	return tr
}

// vanished is the track of a dead-letter queue that the sample at at did not find: what it held
// at the last sample (known), less what Redrive moved out of it since, is lost with it. Nothing is
// counted when the last sample had no counts or the store cannot say what Redrive moved.
func (tr dlqTrack) vanished(at time.Time, moved map[rabbitmodel.QueueRef]int64, ref rabbitmodel.QueueRef) dlqTrack {
	tr.deletedAt = at
	if tr.based && tr.depth > 0 && moved != nil {
		took := max(0, moved[ref]-tr.moved)
		if held := tr.depth - took - tr.credit; held > 0 {
			if tr.lost == 0 {
				tr.lostSince = tr.at
			}
			tr.lost, tr.lostAt, tr.held = tr.lost+held, at, held
		}
	}
	tr.based, tr.credit, tr.heldSince, tr.wasEmpty = false, 0, time.Time{}, false
	return tr
}

// depthInflow is the arrival rate a depth window shows, a second: what the depth (ready + unacked)
// rose by over the window plus what left meanwhile, step by step between its samples. What left
// in a step is what Redrive's jobs counted out of the queue, or, when more, the broker's ack rate
// at the lower of the step's two readings times the step. An ack rate is the broker's figure over
// its last few seconds, not over the step: added whole to the window's average rise, a drain (a
// replay emptying a DLQ) that had just begun read as arrivals at nearly its own rate. Redrive's
// count runs ahead of the depth the broker shows (a job counts before it acks, and the broker's
// statistics come late): in the step a job begins moving, it counts for no more than the depth
// fell, so that lead is not taken for arrivals; afterwards it stays about the same and cancels
// out over the window. Never negative; 0 with fewer than two samples.
func depthInflow(w []depth) float64 {
	if len(w) < 2 {
		return 0
	}
	span := w[len(w)-1].at.Sub(w[0].at).Seconds()
	if span <= 0 {
		return 0
	}
	arrived := 0.0
	for i := 1; i < len(w); i++ {
		prev, cur := w[i-1], w[i]
		rise := float64(cur.ready + cur.unacked - prev.ready - prev.unacked)
		left := min(prev.ack, cur.ack) * cur.at.Sub(prev.at).Seconds()
		if cur.took >= 0 {
			took := float64(cur.took)
			if prev.took <= 0 { // Redrive began moving in this step (or nothing says it did not)
				took = min(took, max(0, -rise))
			}
			left = max(left, took)
		}
		arrived += rise + left
	}
	return max(0, arrived/span)
}

// growth reports whether ready or unacked rose at every step of a full window.
func growth(w []depth) (bool, string) {
	if len(w) < GrowthSamples {
		return false, ""
	}
	rising := func(v func(depth) int64) bool {
		for i := 1; i < len(w); i++ {
			if v(w[i]) <= v(w[i-1]) {
				return false
			}
		}
		return true
	}
	first, last := w[0], w[len(w)-1]
	span := last.at.Sub(first.at).Round(time.Second)
	var parts []string
	if rising(func(d depth) int64 { return d.ready }) {
		parts = append(parts, "ready "+ops.FormatNum(first.ready)+" → "+ops.FormatNum(last.ready))
	}
	if rising(func(d depth) int64 { return d.unacked }) {
		parts = append(parts, "unacked "+ops.FormatNum(first.unacked)+" → "+ops.FormatNum(last.unacked))
	}
	if len(parts) == 0 {
		return false, ""
	}
	return true, strings.Join(parts, ", ") + " in " + ops.FormatAge(span)
}

// LatestRabbit returns the broker's latest stored snapshot, read and cached like LatestKafka: any
// replica answers from the store, concurrent callers share one read, and the copy is kept for
// about a second. A broker never sampled yet has a zero At. The snapshot is shared: callers must
// not modify it. Errors: ops.ErrNotFound for a broker that is not configured, ops.ErrUnavailable
// when the store cannot be read.
func (s *Sampler) LatestRabbit(ctx context.Context, broker string) (queues.Snapshot, error) {
	if _, ok := s.rmq.byName[broker]; !ok {
		return queues.Snapshot{}, ops.NotFound("rabbitmq broker %q is not configured", broker)
	}
	snap, err := latest(ctx, s, s.rmq.cache, "rabbitmq broker", broker, s.readRabbit)
	if err != nil {
		return queues.Snapshot{}, err
	}
	return s.agedRabbit(snap), nil
}

// readRabbit reads the stored snapshot; the document is read and decoded once per new sample.
func (s *Sampler) readRabbit(ctx context.Context, broker string) (queues.Snapshot, error) {
	return readStored(ctx, s, s.rmq.cache, history.SnapshotRabbit, queues.Snapshot{Broker: broker}, func(snap queues.Snapshot, row history.Snapshot) (queues.Snapshot, error) {
		decoded, ok, err := decodeRabbit(row.Data)
		if err != nil {
			return queues.Snapshot{}, fmt.Errorf("rabbitmq broker %q: %w", broker, err)
		}
		if ok {
			snap.At, snap.Queues, snap.Edges, snap.RetryLoops = row.At, decoded.Queues, decoded.Edges, decoded.RetryLoops
		}
		return snap, nil
	})
}

// rememberRabbit is remember for a broker's snapshot.
func (s *Sampler) rememberRabbit(snap queues.Snapshot) {
	if s.cacheTTL > 0 {
		keepNewer(&s.cacheMu, s.rmq.cache, snap.Broker, snap)
	}
}

// rememberRabbitError is rememberError for a broker's snapshot.
func (s *Sampler) rememberRabbitError(broker, msg string, at time.Time) {
	markFailed(&s.cacheMu, s.rmq.cache, broker, msg, at)
}

// RabbitQueueHistory returns a queue's history from since to now in at most maxPoints points:
// per time bucket the highest ready, unacked and consumer counts (so spikes survive) and the
// average rates. A queue without samples in the range yields no points. Like KafkaGroupHistory,
// an answer is shared by the viewers of the same chart for one Interval; callers must not modify
// it. Errors: ops.ErrNotFound for an unconfigured broker; ops.ErrInvalid for an empty vhost or
// queue, a since not before now, or maxPoints outside [1, MaxHistoryPoints]; ops.ErrUnavailable
// when the store cannot be read.
func (s *Sampler) RabbitQueueHistory(ctx context.Context, broker, vhost, queue string, since time.Time, maxPoints int) ([]history.RabbitQueuePoint, error) {
	if _, ok := s.rmq.byName[broker]; !ok {
		return nil, ops.NotFound("rabbitmq broker %q is not configured", broker)
	}
	switch {
	case vhost == "":
		return nil, ops.Invalid("vhost", "required")
	case queue == "":
		return nil, ops.Invalid("queue", "required")
	}
	now := s.now()
	key := queueHistoryKey{broker: broker, vhost: vhost, queue: queue, span: now.Sub(since).Round(time.Second), maxPoints: maxPoints}
	if s.cacheTTL > 0 {
		if points, ok := recent(&s.cacheMu, s.rmq.history, key, s.interval); ok {
			return points, nil
		}
	}
	flight := fmt.Sprintf("rabbit-history\x00%s\x00%s\x00%s\x00%d\x00%d", broker, vhost, queue, key.span, maxPoints)
	what := fmt.Sprintf("rabbitmq queue %s/%s history", vhost, queue)
	return ops.Shared(ctx, &s.reads, flight, 2*readTimeout, what, func(ctx context.Context) ([]history.RabbitQueuePoint, error) {
		points, err := s.store.RabbitQueueHistory(ctx, broker, vhost, queue, since, now, maxPoints)
		if err != nil {
			return nil, err
		}
		if s.cacheTTL > 0 {
			keepChart(&s.cacheMu, s.rmq.history, key, points, s.interval)
		}
		return points, nil
	})
}

// RabbitSnapshotOf is a snapshot made from a live topology, without growth (it has no history):
// what a page shows for a queue the last sample does not have yet.
func RabbitSnapshotOf(broker string, t rabbitmodel.Topology, at time.Time) queues.Snapshot {
	snap := queues.Snapshot{Broker: broker, At: at, Queues: make([]queues.Queue, len(t.Queues)), Edges: t.Edges, RetryLoops: t.RetryLoops}
	for i, q := range t.Queues {
		snap.Queues[i] = queues.Queue{Queue: q, Retry: t.RetryQueues[q.Ref()]}
	}
	return snap
}
