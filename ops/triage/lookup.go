package triage

import (
	"context"
	"sync"

	"github.com/redrive/redrive/ops/search"
)

// SettledStates reads the states of a topic's records that are not open; *store.Store
// implements it.
type SettledStates interface {
	SettledStates(ctx context.Context, cluster, topic string) (map[RecordKey]string, error)
}

// StateLookup answers a filter's resolution variable for one topic's records
// (search.Filter.WithResolutions). The topic's marks are read once, on first use, so a filter
// that never names resolution costs nothing; a store that cannot say fails the expression on
// every record (no match, counted), never guesses "open". Safe for concurrent use.
func StateLookup(ctx context.Context, st SettledStates, cluster, topic string) search.ResolutionOf {
	var once sync.Once
	var states map[RecordKey]string
	var err error
	return func(partition int32, offset int64) (string, error) {
		once.Do(func() { states, err = st.SettledStates(ctx, cluster, topic) })
		if err != nil {
			return "", err
		}
		if s, ok := states[RecordKey{Partition: partition, Offset: offset}]; ok {
			return s, nil
		}
		return StateOpen, nil
	}
}
