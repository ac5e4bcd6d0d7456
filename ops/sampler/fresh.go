package sampler

import (
	"context"
	"fmt"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/lag"
)

// FreshKafka is LatestKafka for someone looking at the cluster (a group page, the groups API):
// when this replica leads the cluster and its newest sample is older than Options.MinRefresh, the
// cluster is sampled again first — one on-demand sample for all concurrent callers (singleflight),
// at most one per MinRefresh, stored and fenced like a tick's — so the answer reflects commits
// made up to MinRefresh ago while the sampler stays the only caller of the cluster's admin APIs.
// On a replica that does not lead the cluster it answers the stored snapshot, as LatestKafka. A
// failed on-demand sample is not an error of the read: the snapshot then carries it as usual.
// Errors are LatestKafka's.
func (s *Sampler) FreshKafka(ctx context.Context, cluster string) (lag.Snapshot, error) {
	st, ok := s.kafkaByName[cluster]
	if !ok {
		return lag.Snapshot{}, ops.NotFound("kafka cluster %q is not configured", cluster)
	}
	if s.minFresh > 0 && s.staleFor(cluster) {
		if _, leads := s.leaseOf(kafkaSourceName(cluster)); leads {
			ch := s.reads.DoChan("refresh/"+cluster, func() (any, error) {
				// Detached from the first caller, so its leaving does not cancel the others' sample.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
				defer cancel()
				s.tickMu.Lock()
				defer s.tickMu.Unlock()
				// A tick may have sampled while this waited for tickMu.
				if !s.staleFor(cluster) {
					return nil, nil
				}
				l, ok := s.leaseOf(kafkaSourceName(cluster))
				if !ok {
					return nil, nil
				}
				s.m.refreshes.Inc()
				return nil, s.sampleKafka(rctx, st, l, s.now())
			})
			select {
			case <-ch:
			case <-ctx.Done():
				return lag.Snapshot{}, fmt.Errorf("kafka cluster %q: snapshot: %w", cluster, ctx.Err())
			}
		}
	}
	return s.LatestKafka(ctx, cluster)
}

// staleFor reports whether the cluster was last sampled (or tried) on this replica longer than
// MinRefresh ago; a failing cluster is thus tried at most once per MinRefresh too.
func (s *Sampler) staleFor(cluster string) bool {
	st := s.kafkaByName[cluster]
	last := st.tried.Load()
	return last == 0 || s.now().Sub(time.Unix(0, last)) >= s.minFresh
}
