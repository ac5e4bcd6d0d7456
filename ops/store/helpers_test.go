package store_test

import (
	"context"
	"testing"

	"github.com/redrive/redrive/ops/pgtest"
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
