package triage

import (
	"context"
	"sync"

	"github.com/redrive/redrive/ops/search"
)

// SettledStates reads the states of a topic's records that are not open, of the marks written
// under topicID ("" reads every mark); *store.Store implements it.
type SettledStates interface {
	SettledStates(ctx context.Context, cluster, topic, topicID string) (map[RecordKey]string, error)
}

// StateLookup answers a filter's resolution variable for one topic's records
// (search.Filter.WithResolutions): the marks written under topicID, the topic's ID when its
// records are read (Cluster.TopicID; those of a topic deleted before it under the same name
// are not its records'). The topic's marks are read once, on first use, so a filter that never
// names resolution costs nothing; a store that cannot say fails the expression on every record
// (no match, counted), never guesses "open". Safe for concurrent use.
func StateLookup(ctx context.Context, st SettledStates, cluster, topic, topicID string) search.ResolutionOf {
	return stateLookup(ctx, st, cluster, topic, func() (string, error) { return topicID, nil })
}

// stateLookup is StateLookup with the topic's ID asked on first use.
func stateLookup(ctx context.Context, st SettledStates, cluster, topic string, topicID func() (string, error)) search.ResolutionOf {
	var once sync.Once
	var states map[RecordKey]string
	var err error
	return func(partition int32, offset int64) (string, error) {
		once.Do(func() {
			var id string
			if id, err = topicID(); err == nil {
				states, err = st.SettledStates(ctx, cluster, topic, id)
			}
		})
		if err != nil {
			return "", err
		}
		if s, ok := states[RecordKey{Partition: partition, Offset: offset}]; ok {
			return s, nil
		}
		return StateOpen, nil
	}
}
