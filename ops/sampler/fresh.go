package sampler

import (
	"context"
	"fmt"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/lag"
)

// FreshKafka is LatestKafka for someone looking at the cluster (a group page, the groups API),
// stale while revalidate: when this replica leads the cluster and last sampled it longer than
// Options.MinRefresh ago, a re-sample starts behind the answer — one for all concurrent callers
// (singleflight), at most one per MinRefresh, stored and fenced like a tick's — and the current
// snapshot is answered at once, marked Refreshing, its age in Freshness.Age. Only a snapshot
// as old as Options.MaxServeAge or older (or none yet) makes the read wait for the re-sample,
// bounded by ctx. So readers never queue behind a sample while the snapshot is recent, and the next read
// after the re-sample shows commits made up to MinRefresh before it. On a replica that does not
// lead the cluster it answers the stored snapshot, as LatestKafka. A failed re-sample is not an
// error of the read: the snapshot then carries it as usual. Errors are LatestKafka's.
func (s *Sampler) FreshKafka(ctx context.Context, cluster string) (lag.Snapshot, error) {
	st, ok := s.kafkaByName[cluster]
	if !ok {
		return lag.Snapshot{}, ops.NotFound("kafka cluster %q is not configured", cluster)
	}
	var done <-chan struct{}
	if s.minFresh > 0 && s.staleFor(cluster) {
		if _, leads := s.leaseOf(kafkaSourceName(cluster)); leads {
			done = s.refresh(ctx, st)
		}
	}
	snap, err := s.LatestKafka(ctx, cluster)
	if done == nil || err != nil {
		return snap, err
	}
	if !snap.At.IsZero() && snap.Age < s.maxServeAge {
		select {
		case <-done: // finished already: its snapshot is the one to answer
		default:
			snap.Refreshing = true
			return snap, nil
		}
	} else {
		select {
		case <-done:
		case <-ctx.Done():
			return lag.Snapshot{}, fmt.Errorf("kafka cluster %q: snapshot: %w", cluster, ctx.Err())
		}
	}
	return s.LatestKafka(ctx, cluster)
}

// refresh starts an on-demand sample of the cluster, or joins the one in flight; the channel is
// closed when it is over. The sample is detached from ctx (only its values are kept), so that the
// caller's leaving, or not waiting, cancels nothing. Joining costs a lock: a re-sample takes
// ~100 ms on a busy console, in which hundreds of reads join it, and a goroutine (and
// singleflight channel) for each, all woken at its end, is what kept the answers of some of them
// waiting for the scheduler for as long as the re-sample ran.
func (s *Sampler) refresh(ctx context.Context, st *kafkaState) <-chan struct{} {
	st.refreshMu.Lock()
	defer st.refreshMu.Unlock()
	if st.refreshing != nil {
		return st.refreshing
	}
	done := make(chan struct{})
	st.refreshing = done
	go func() {
		defer func() {
			st.refreshMu.Lock()
			st.refreshing = nil
			st.refreshMu.Unlock()
			close(done)
		}()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		defer cancel()
		s.tickMu.Lock()
		defer s.tickMu.Unlock()
		// A tick may have sampled while this waited for tickMu.
		if !s.staleFor(st.name) {
			return
		}
		l, ok := s.leaseOf(kafkaSourceName(st.name))
		if !ok {
			return
		}
		s.m.refreshes.Inc()
		_ = s.sampleKafka(rctx, st, l, s.now()) // its failure is the snapshot's, as a tick's
	}()
	return done
}

// staleFor reports whether the cluster was last sampled (or tried) on this replica longer than
// MinRefresh ago; a failing cluster is thus tried at most once per MinRefresh too.
func (s *Sampler) staleFor(cluster string) bool {
	st := s.kafkaByName[cluster]
	last := st.tried.Load()
	return last == 0 || s.now().Sub(time.Unix(0, last)) >= s.minFresh
}
