package store_test

import (
	"context"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
)

// openStore is a store on a database of its own, migrated, closed when the test ends.
func openStore(tb testing.TB) *store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), pgtest.NewDatabase(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(st.Close)
	return st
}

// openStoreWithPlan is openStore holding plan "p" of total messages and, for each of jobs, a
// pending job of that plan under that id, created in the order given.
func openStoreWithPlan(tb testing.TB, total int, jobs ...string) *store.Store {
	tb.Helper()
	ctx := context.Background()
	st := openStore(tb)
	w, err := st.BeginPlan(ctx, "p")
	if err != nil {
		tb.Fatal(err)
	}
	if err := w.Commit(ctx, replay.StoredPlan{ID: "p", Actor: "t", Source: []byte(`{}`), Total: total}); err != nil {
		tb.Fatal(err)
	}
	for _, id := range jobs {
		if err := st.CreateJob(ctx, replay.Job{ID: id, PlanID: "p", Actor: "t", RatePerSecond: 1, Total: total}); err != nil {
			tb.Fatal(err)
		}
	}
	return st
}

// atOnce calls call(0) … call(n-1) from n goroutines released together, and returns the first
// error: the same change made by n callers at the same moment.
func atOnce(n int, call func(i int) error) error {
	var g errgroup.Group
	ready := make(chan struct{})
	for i := range n {
		g.Go(func() error {
			<-ready
			return call(i)
		})
	}
	close(ready)
	return g.Wait()
}
