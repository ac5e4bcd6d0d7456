package sampler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
)

// What a replica keeps of what it read from the store, shared by its viewers: a source's latest
// snapshot (kept for Options.CacheTTL) and a chart's history (kept for one Interval). Snapshots and
// charts of Kafka and RabbitMQ are read and kept alike, so these helpers are the one way to.

// cached is an answer read from the store and when it was read (wall clock).
type cached[V any] struct {
	val     V
	fetched time.Time
}

// snapshot is a source's snapshot as a replica keeps it: it knows its source and when its sample
// was taken, so that an older read does not replace a newer one, and takes the error of a sample
// that failed since, as the store does.
type snapshot[V any] interface {
	SampledAt() time.Time
	WithError(msg string, at time.Time) V
	Source() string
}

// latest is a source's snapshot as LatestKafka and LatestRabbit answer it: the replica's copy
// while it is younger than CacheTTL; then, until it is cacheServeFor CacheTTLs old, still the copy
// while the store is read behind the answer (stale while revalidate: no reader waits for the
// store's round trip, which every reader of the second used to); past that, read from the store
// once for all concurrent callers. What is read is kept. The answer's age is its sample's
// (Freshness), whichever way it came. kind and name say which source a caller gave up waiting for.
func latest[V snapshot[V]](ctx context.Context, s *Sampler, m map[string]cached[V], kind, name string, read func(context.Context, string) (V, error)) (V, error) {
	c, ok := peek(&s.cacheMu, m, name)
	age := time.Since(c.fetched)
	if ok && age < s.cacheTTL {
		return c.val, nil
	}
	load := func(ctx context.Context) (V, error) {
		snap, err := read(ctx, name)
		if err == nil && s.cacheTTL > 0 {
			keepNewer(&s.cacheMu, m, name, snap)
		}
		return snap, err
	}
	if ok && age < cacheServeFor*s.cacheTTL {
		ops.SharedBehind(ctx, &s.reads, kind+"/"+name, readTimeout, load)
		return c.val, nil
	}
	return ops.Shared(ctx, &s.reads, kind+"/"+name, readTimeout, fmt.Sprintf("%s %q: snapshot", kind, name), load)
}

// cacheServeFor is how many CacheTTLs old a replica's copy may be and still answer while the store
// is read behind it: a store that does not answer for that long makes the readers wait again (and
// see its error), rather than a copy grown old without a word.
const cacheServeFor = 10

// readStored reads a source's stored snapshot (the cache-miss path of latest); blank names the
// source and is the answer for one never sampled. When the replica's expired copy is still the
// stored sample, only the row's times and error are read and the copy is answered with them;
// decode reads the document into blank (the row's error set) once per new sample.
func readStored[V snapshot[V]](ctx context.Context, s *Sampler, m map[string]cached[V], kind string, blank V, decode func(V, history.Snapshot) (V, error)) (V, error) {
	prev, _ := peek(&s.cacheMu, m, blank.Source())
	have := prev.val.SampledAt()
	row, err := s.store.SnapshotIfChanged(ctx, kind, blank.Source(), have)
	switch {
	case errors.Is(err, ops.ErrNotFound):
		return blank, nil
	case err != nil:
		var zero V
		return zero, err
	}
	if row.Data == nil && !have.IsZero() {
		return prev.val.WithError(row.Error, row.ErrorAt), nil
	}
	return decode(blank.WithError(row.Error, row.ErrorAt), row)
}

// peek returns m's copy of k and when it was read, under mu.
func peek[K comparable, V any](mu *sync.Mutex, m map[K]cached[V], k K) (cached[V], bool) {
	mu.Lock()
	defer mu.Unlock()
	c, ok := m[k]
	return c, ok
}

// recent returns m's copy of k when it was read less than ttl ago.
func recent[K comparable, V any](mu *sync.Mutex, m map[K]cached[V], k K, ttl time.Duration) (V, bool) {
	c, ok := peek(mu, m, k)
	if !ok || time.Since(c.fetched) >= ttl {
		var zero V
		return zero, false
	}
	return c.val, true
}

// keepNewer keeps snap as m's copy of k unless a concurrent read brought a newer sample.
func keepNewer[V snapshot[V]](mu *sync.Mutex, m map[string]cached[V], k string, snap V) {
	mu.Lock()
	defer mu.Unlock()
	if c, ok := m[k]; ok && c.val.SampledAt().After(snap.SampledAt()) {
		return
	}
	m[k] = cached[V]{val: snap, fetched: time.Now()}
}

// keepChart keeps v as m's copy of k and drops the copies older than ttl, which keeps the map to
// the charts being watched.
func keepChart[K comparable, V any](mu *sync.Mutex, m map[K]cached[V], k K, v V, ttl time.Duration) {
	mu.Lock()
	defer mu.Unlock()
	for old, c := range m {
		if time.Since(c.fetched) >= ttl {
			delete(m, old)
		}
	}
	m[k] = cached[V]{val: v, fetched: time.Now()}
}

// markFailed marks m's copy of k, if any, with a failed sample.
func markFailed[V snapshot[V]](mu *sync.Mutex, m map[string]cached[V], k, msg string, at time.Time) {
	mu.Lock()
	defer mu.Unlock()
	if c, ok := m[k]; ok {
		c.val = c.val.WithError(msg, at)
		m[k] = c
	}
}
