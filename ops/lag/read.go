package lag

import (
	"context"
	"errors"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/payload"
)

// GroupSource is a Kafka cluster as one group's read needs it (*kafka.Cluster): the group whole,
// and its offsets now.
type GroupSource interface {
	Group(ctx context.Context, name string) (kafkamodel.Group, error)
	GroupOffsetsNow(ctx context.Context, group string, topics []string) (kafkamodel.GroupOffsets, error)
}

// FindGroup is consumer group name of snap. A group the snapshot does not have (created since the
// sample), or any group before the cluster's first sample, is read through from k once and judged
// once by rules, so that a page or a script asking right after it appeared gets it rather than a
// 404 for up to an interval. Errors: ops.ErrNotFound for a group the snapshot and the cluster do
// not have; ops.ErrUnavailable before the first sample when the cluster cannot say.
func FindGroup(ctx context.Context, k GroupSource, snap Snapshot, name string, rules Rules) (Group, error) {
	g, err := snapshotGroup(snap, name)
	if !ops.ReadThrough(err, snap.At) {
		return g, err
	}
	live, lerr := k.Group(ctx, name)
	switch {
	case lerr == nil:
		return JudgeOnce(live, rules, time.Now()), nil
	case errors.Is(lerr, ops.ErrNotFound):
		return g, lerr
	}
	return g, err // the snapshot's answer stands
}

func snapshotGroup(snap Snapshot, name string) (Group, error) {
	if g, ok := snap.group(name); ok {
		return g, nil
	}
	if snap.At.IsZero() {
		return Group{}, ops.NotSampledYet("kafka cluster", snap.Cluster)
	}
	return Group{}, ops.NotFound("consumer group %q not found in kafka cluster %q", payload.Clip(name, kafkamodel.EchoLimit), snap.Cluster)
}

func (s Snapshot) group(name string) (Group, bool) {
	for _, g := range s.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return Group{}, false
}

// LiveOffsetsWithin bounds the live read of one group's offsets; past it the sampled ones stay.
const LiveOffsetsWithin = time.Second

// LiveOffsets puts group g's offsets as k has them now in place of snap's (WithOffsets): one
// OffsetFetch and one ListOffsets per leader, so that a group page or API read shows a commit
// made a moment ago while the status, rate and catch-up stay the sampler's. It answers when they
// were read; the zero time when g stays as sampled (a share group, whose offsets are its own, or
// a cluster that could not answer within LiveOffsetsWithin), and now for a group snap does not
// have (FindGroup read it through: live already).
func LiveOffsets(ctx context.Context, k GroupSource, snap Snapshot, g Group) (Group, time.Time) {
	if _, ok := snap.group(g.Name); !ok {
		return g, time.Now()
	}
	if g.Kind() == kafkamodel.GroupShare {
		return g, time.Time{}
	}
	topics := make([]string, 0, len(g.Topics))
	for _, t := range g.Topics {
		topics = append(topics, t.Topic)
	}
	ctx, cancel := context.WithTimeout(ctx, LiveOffsetsWithin)
	defer cancel()
	o, err := k.GroupOffsetsNow(ctx, g.Name, topics)
	if err != nil {
		return g, time.Time{}
	}
	return g.WithOffsets(o), o.At
}
