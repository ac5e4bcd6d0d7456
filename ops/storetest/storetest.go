// Package storetest opens the console's own store for a test: migrated, on a database of its own
// (ops/pgtest) unless the test shares one between replicas, closed at cleanup.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/store"
)

// Open is the store on a database of its own.
func Open(tb testing.TB) *store.Store {
	tb.Helper()
	return On(tb, pgtest.NewDatabase(tb))
}

// On opens (and migrates) the store on dsn: one console replica's store where several share it.
func On(tb testing.TB, dsn string) *store.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		tb.Fatalf("store.Open: %v", err)
	}
	tb.Cleanup(st.Close)
	return st
}
