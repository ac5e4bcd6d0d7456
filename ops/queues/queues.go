// Package queues is the RabbitMQ read model: a broker's queues and dead-letter topology as the
// sampler last saw them (Snapshot) and each queue with what its recent samples add (Queue); a
// queue's history is history.RabbitQueuePoint. The sampler (ops/sampler) makes it; the pages, the
// health rules and the exporter read it.
package queues

import (
	"sort"
	"time"

	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// Snapshot is one broker's queues and dead-letter topology as last sampled. It is shared by
// every reader of a replica: callers must not modify it.
type Snapshot struct {
	Broker string
	At     time.Time // when the sample was taken; zero when none exists yet
	// Error is set when the last sampling of this broker failed (the management API is
	// unreachable); Queues and the topology then hold the last good sample, taken at At.
	Error   string
	ErrorAt time.Time
	// Queues are the watched vhosts' queues sorted by vhost and name, with IsDeadLetterQueue
	// resolved through exchanges and bindings (rabbitmodel.Topology).
	Queues     []Queue
	Edges      []rabbitmodel.Edge      // one per queue with a dead-letter exchange, by vhost and queue
	RetryLoops []rabbitmodel.RetryLoop // by vhost, retry queue, work queue
	// Gone are the dead-letter queues that vanished (deleted by someone, by an expires policy or
	// argument, with the connection of an exclusive queue or the last consumer of an auto-delete
	// one) holding dead letters, or with a loss still counted: kept LostWindow after their last
	// loss, by vhost and name. A queue of the same name declared again takes its loss over.
	Gone []GoneQueue
	history.Freshness
}

// GoneQueue is a dead-letter queue that is no longer there, with the loss it leaves.
type GoneQueue struct {
	Vhost, Name string
	// DeletedAt is the first sample that did not find it; Held how many dead letters it held at
	// the sample before (ready + unacked) that Redrive's jobs did not take out since: lost with it.
	DeletedAt time.Time
	Held      int64
	// Lost, LostSince and LostAt are as Queue's, the deleted ones (Held) included.
	Lost              int64
	LostSince, LostAt time.Time
}

// StatsDisabled reports whether the broker reports no queue statistics (any queue says so): a
// page says rabbitmodel.StatsDisabledNotice once, above the queues.
func (s Snapshot) StatsDisabled() bool {
	for _, q := range s.Queues {
		if q.StatsDisabled {
			return true
		}
	}
	return false
}

// Queue is a queue with what the sampler adds from its recent samples.
type Queue struct {
	rabbitmodel.Queue
	Retry bool // the retry queue of a retry loop (a TTL queue dead-lettering back to its work queue)
	// Growing is true when the ready or the unacked count rose at each of the last sampler.GrowthSamples
	// samples; Growth says which and by how much ("ready 10 → 40 in 45s"). Only samples with
	// counts count: while the broker reports none (CountsUnreported), the last known growth.
	Growing bool
	Growth  string
	// Inflow is how many messages a second arrive: the broker's publish rate, or, when more, the
	// rise of the queue's depth (ready + unacked) over the sampler's window plus what left it
	// meanwhile (what Redrive's jobs moved out, or the broker's acks), so that a drain alone, a
	// replay emptying a DLQ, reads about 0. RabbitMQ counts only what channels publish, never
	// what it dead-letters itself, so a DLQ fed by a dead-letter exchange has a publish rate of 0
	// however fast it fills. 0, meaning not known, while the broker reports no counts.
	Inflow float64
	// Lost counts the messages that left this dead-letter queue since LostSince without a Redrive
	// job moving them: the broker dropped them at a delivery limit, someone purged the queue, a
	// TTL expired them or a consumer elsewhere took them. Between two samples it is how far the
	// depth (ready + unacked) fell beyond what Redrive's replay and discard jobs took out, so
	// arrivals in the same interval hide as many departures: it is at least this many. LostAt is
	// the sample that last saw such a fall; the count is kept until LostWindow after it. Zero for
	// any other queue.
	Lost              int64
	LostSince, LostAt time.Time
	// HeldSince is, for a dead-letter queue holding messages (ready + unacked), the first sample
	// that found them after a recent one (within the sampler's growth window) that found it
	// empty: its dead letters began to pile up between the two. Zero while it is empty, for any
	// other queue, and when no recent sample saw it empty (it held messages when the console
	// first sampled it, or after a gap in the samples): then nobody knows since when.
	HeldSince time.Time
	// LastCounted is, while the broker reports no counts for the queue (CountsUnreported), the
	// last sample that had them: when, and its ready and unacked counts ("40 when last counted at
	// 18:02"); zero when the console has none (the counts were never reported while it watched).
	// Zero while the counts are reported. Never used to count growth or loss.
	LastCounted Counted
}

// Counted is a queue's counts as one sample had them.
type Counted struct {
	At             time.Time
	Ready, Unacked int64
}

// LostWindow is how long a dead-letter queue's Lost count stays after the last loss it counts:
// a loss is an event nobody can see in the queue any more, so it is a problem of its own for a
// day (a silence holds its notifications) rather than until the next sample.
const LostWindow = 24 * time.Hour

// Queue finds a queue of the snapshot.
func (s Snapshot) Queue(vhost, name string) (Queue, bool) {
	i := sort.Search(len(s.Queues), func(i int) bool {
		q := s.Queues[i]
		return q.Vhost > vhost || (q.Vhost == vhost && q.Name >= name)
	})
	if i < len(s.Queues) && s.Queues[i].Vhost == vhost && s.Queues[i].Name == name {
		return s.Queues[i], true
	}
	return Queue{}, false
}

// Edge is where the queue's dead letters go; false when it has no dead-letter exchange.
func (s Snapshot) Edge(vhost, queue string) (rabbitmodel.Edge, bool) {
	i := sort.Search(len(s.Edges), func(i int) bool {
		e := s.Edges[i]
		return e.FromVhost > vhost || (e.FromVhost == vhost && e.FromQueue >= queue)
	})
	if i < len(s.Edges) && s.Edges[i].FromVhost == vhost && s.Edges[i].FromQueue == queue {
		return s.Edges[i], true
	}
	return rabbitmodel.Edge{}, false
}

// DeadLettersFrom lists the queues of vhost that dead-letter into queue, sorted.
func (s Snapshot) DeadLettersFrom(vhost, queue string) []string {
	return rabbitmodel.DeadLettersFrom(rabbitmodel.Topology{Edges: s.Edges}, vhost, queue)
}

func (s Snapshot) SampledAt() time.Time { return s.At }

func (s Snapshot) Source() string { return s.Broker }

func (s Snapshot) WithError(msg string, at time.Time) Snapshot {
	s.Error, s.ErrorAt = msg, at
	return s
}
