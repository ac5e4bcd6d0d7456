package sampler

import (
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/triage"

	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redrive/redrive/ops"
)

// StaleAfter is how many Intervals may pass without any sampling of a source (good or failed)
// before its snapshot is stale: no replica is sampling it (all stopped, or the leader hangs), and
// the pages must not show it as current.
const StaleAfter = 3

// freshness judges a snapshot sampled at at whose last failed sample was at errorAt.
func (s *Sampler) freshness(at, errorAt time.Time) history.Freshness {
	now := s.now()
	var f history.Freshness
	if !at.IsZero() {
		f.Age = max(now.Sub(at), 0)
	}
	last := at
	if errorAt.After(last) {
		last = errorAt
	}
	if last.IsZero() {
		f.Stale = now.Sub(s.started) > StaleAfter*s.interval
		f.Since = max(now.Sub(s.started), 0)
		return f
	}
	f.Since = max(now.Sub(last), 0)
	f.Stale = f.Since > StaleAfter*s.interval
	return f
}

func (s *Sampler) agedKafka(snap lag.Snapshot) lag.Snapshot {
	snap.Freshness = s.freshness(snap.At, snap.ErrorAt)
	return snap
}

// withOpen fills how many records of each dead-letter topic are still open, from the store's
// resolutions, at each read rather than each sample: a group resolved now stops being on fire on
// the next page view, not a sample later. When the store cannot say, every record counts as open.
func (s *Sampler) withOpen(ctx context.Context, snap lag.Snapshot) lag.Snapshot {
	topics, err := triage.OpenCounts(ctx, s.store, snap.Cluster, snap.DeadLetterTopics)
	if err != nil {
		s.log.Warn("sampler: open dead letters unknown, counting every record", "cluster", snap.Cluster, "err", err)
	}
	if snap.DeadLetterTopics != nil {
		snap.DeadLetterTopics = topics
	}
	return snap
}

func (s *Sampler) agedRabbit(snap queues.Snapshot) queues.Snapshot {
	snap.Freshness = s.freshness(snap.At, snap.ErrorAt)
	return snap
}

// StaleAfterDuration is StaleAfter Intervals: the age past which a snapshot is stale.
func (s *Sampler) StaleAfterDuration() time.Duration { return StaleAfter * s.interval }

// Ping is the sampler's readiness check: it fails (ops.ErrUnavailable) naming every source whose
// snapshot is stale — no replica sampled it for StaleAfter Intervals — or whose snapshot cannot be
// read. A source whose broker is down is not stale (its snapshot carries the error, and the
// broker's own check reports it).
func (s *Sampler) Ping(ctx context.Context) error {
	var errs []error
	check := func(name string, f history.Freshness, err error) {
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		case f.Stale:
			errs = append(errs, fmt.Errorf("%s: not sampled for %s (stale after %s): no replica is sampling it",
				name, f.Since.Round(time.Second), s.StaleAfterDuration()))
		}
	}
	for _, st := range s.kafka {
		snap, err := s.LatestKafka(ctx, st.name)
		check(kafkaSourceName(st.name), snap.Freshness, err)
	}
	for _, st := range s.rmq.brokers {
		snap, err := s.LatestRabbit(ctx, st.name)
		check(rabbitSourceName(st.name), snap.Freshness, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("sampler: %w: %w", ops.ErrUnavailable, errors.Join(errs...))
	}
	return nil
}
