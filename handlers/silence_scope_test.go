package handlers

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/lag"
)

type namedCluster struct {
	KafkaCluster
	name string
}

func (c namedCluster) Name() string { return c.name }

type groupsSnapshot struct {
	KafkaSnapshots
	groups map[string][]string // per cluster
}

func (s groupsSnapshot) LatestKafka(_ context.Context, cluster string) (lag.Snapshot, error) {
	names, ok := s.groups[cluster]
	if !ok {
		return lag.Snapshot{}, ops.NotFound("no sample of %s yet", cluster)
	}
	var snap lag.Snapshot
	for _, n := range names {
		snap.Groups = append(snap.Groups, lag.Group{Group: kafka.Group{Name: n}})
	}
	return snap, nil
}

// FreshKafka is LatestKafka: nothing here re-samples.
func (s groupsSnapshot) FreshKafka(ctx context.Context, cluster string) (lag.Snapshot, error) {
	return s.LatestKafka(ctx, cluster)
}

// A silence naming a cluster or a consumer group the console does not watch would silence
// nothing, while its author believed the noise handled (issue 37, item 12): refused, naming the
// matcher; a group of a cluster not sampled yet is not refused on a guess.
func TestSilenceMustMatchSomething(t *testing.T) {
	h := (&Notifications{}).Watching([]KafkaCluster{namedCluster{name: "main"}, namedCluster{name: "edge"}},
		groupsSnapshot{groups: map[string][]string{"main": {"billing-service", "inventory-service"}}}, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		matchers map[string]string
		want     string
	}{
		{map[string]string{"kind": "kafka_group", "group": "billing-service"}, ""},
		{map[string]string{"cluster": "main", "group": "inventory-service"}, ""},
		{map[string]string{"cluster": "edge", "group": "anything"}, ""}, // edge has no sample yet
		{map[string]string{"kind": "kafka_group", "group": "billing"}, `group: no consumer group "billing" is in the latest lag samples`},
		{map[string]string{"cluster": "mian"}, `cluster: "mian" is none of the clusters and brokers the console watches (main, edge)`},
		{map[string]string{"cluster": "main", "group": "nope"}, `group: no consumer group "nope"`},
	} {
		err := h.watched().Refusal(ctx, tc.matchers)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.matchers, err)
		case tc.want != "" && (!errors.Is(err, ops.ErrInvalid) || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%v: %v; want %q", tc.matchers, err, tc.want)
		}
	}
	if err := (&Notifications{}).watched().Refusal(ctx, map[string]string{"group": "x"}); err != nil {
		t.Errorf("nothing watched: %v", err)
	}
}
