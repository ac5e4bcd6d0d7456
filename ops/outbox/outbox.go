// Package outbox inspects and repairs the transactional outbox tables of the services Redrive
// watches (the seed's outbox_event layout by default; table and columns configurable).
//
// This package is the domain: what an outbox event, its states, the overview and a repair are,
// and the Store it needs from each database. The adapters provide it — ops/outbox/pgoutbox
// (PostgreSQL) and ops/outbox/mysqloutbox (MySQL and MariaDB) — and every one of them passes the
// same behavioural suite, ops/outbox/outboxtest.
//
// Every repair is a conditional UPDATE over rows locked with FOR UPDATE SKIP LOCKED, so a relay
// that currently holds a row (it is mid-publish) keeps it: the console never steals a live lease.
package outbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/payload"
)

// Status is an outbox row's state as the relay writes it.
type Status string

// The states of the seed's relay (section 六.5).
const (
	Ready      Status = "READY"
	Processing Status = "PROCESSING"
	Sent       Status = "SENT"
	Failed     Status = "FAILED"
	Dead       Status = "DEAD"
)

// Statuses lists every state in lifecycle order.
var Statuses = []Status{Ready, Processing, Sent, Failed, Dead}

// Unsent are the states a healthy outbox holds few rows in, which the overview counts exactly
// (each with the (status, available_at) index); SENT, the bulk, may be estimated.
var Unsent = []Status{Ready, Processing, Failed, Dead}

// ParseStatus accepts a state name in any case. The error quotes what it was given, cut to
// EchoLimit bytes: a query may be any length.
func ParseStatus(s string) (Status, error) {
	for _, st := range Statuses {
		if strings.EqualFold(s, string(st)) {
			return st, nil
		}
	}
	return "", ops.Invalid("status", fmt.Sprintf("%q is not one of READY, PROCESSING, SENT, FAILED, DEAD", payload.Clip(s, EchoLimit)))
}

// EchoLimit bounds the bytes of a caller's value that an error quotes back; "…" marks a cut.
const EchoLimit = 64

// Outbox is one configured outbox table: the domain's rules (limits, the cached overview, the
// audited repairs) over the Store an adapter of its database provides.
type Outbox struct {
	name        string
	maxAttempts int
	staleAfter  atomic.Int64 // a time.Duration; config reload may change it
	store       Store
	statsFlight singleflight.Group
	format      Format   // registry formats only (NewRegistry)
	registry    Registry // nil for the seed

	cacheMu  sync.Mutex
	cached   Stats
	cachedAt time.Time
}

// Settings are an outbox's own settings, as the domain reads them.
type Settings struct {
	Name        string // required; the configured name, used in URLs and errors
	MaxAttempts int    // the relay's attempt limit, shown for context; 0 when unknown
	// StaleReadyAfter is how long a due READY row may wait before the backlog is a problem.
	StaleReadyAfter time.Duration
}

// New is the outbox named s.Name over store, which it closes on Close.
func New(s Settings, store Store) *Outbox {
	o := &Outbox{name: s.Name, maxAttempts: s.MaxAttempts, store: store}
	o.staleAfter.Store(int64(s.StaleReadyAfter))
	return o
}

// StatsMaxAge is how old an overview CachedStats may serve is: every open panel refreshes every
// few seconds, and a 5,000,000-row outbox costs tens of milliseconds to count.
const StatsMaxAge = 2 * time.Second

// CachedStats returns Stats computed at most maxAge ago. The console's own repairs (release,
// requeue) invalidate it, so an operator sees their action at once.
func (o *Outbox) CachedStats(ctx context.Context, maxAge time.Duration) (Stats, error) {
	o.cacheMu.Lock()
	if !o.cachedAt.IsZero() && time.Since(o.cachedAt) < maxAge {
		st := o.cached
		o.cacheMu.Unlock()
		return st, nil
	}
	o.cacheMu.Unlock()
	st, err := o.Stats(ctx)
	if err == nil {
		o.cacheMu.Lock()
		o.cached, o.cachedAt = st, time.Now()
		o.cacheMu.Unlock()
	}
	return st, err
}

func (o *Outbox) invalidate() {
	o.cacheMu.Lock()
	o.cachedAt = time.Time{}
	o.cacheMu.Unlock()
}

// Name is the configured name.
func (o *Outbox) Name() string { return o.name }

// MaxAttempts is the relay's configured attempt limit (for context on the page).
func (o *Outbox) MaxAttempts() int { return o.maxAttempts }

// StaleReadyAfter is how long a due READY row may wait before the backlog counts as a problem.
func (o *Outbox) StaleReadyAfter() time.Duration { return time.Duration(o.staleAfter.Load()) }

// SetStaleReadyAfter changes the threshold at run time (a config reload).
func (o *Outbox) SetStaleReadyAfter(d time.Duration) { o.staleAfter.Store(int64(d)) }

// Close releases the store's connections.
func (o *Outbox) Close() { o.store.Close() }

// Ping checks that the table is reachable and readable.
func (o *Outbox) Ping(ctx context.Context) error { return o.store.Ping(ctx) }

// Stats is the outbox overview.
type Stats struct {
	// Counts are the rows per state, keyed by the state names of the table's format (the seed's
	// READY, PROCESSING, SENT, FAILED, DEAD).
	Counts map[Status]int64
	// SentIsEstimate: on large tables SENT comes from the database's row estimate minus the exact
	// counts of the other states, so the overview never scans millions of SENT rows.
	SentIsEstimate bool
	StuckLeases    int64
	// OldestStuckAge is how long ago the earliest of the stuck rows' leases expired: their relay
	// stopped at the latest then. Nil when nothing is stuck (and for a registry, which has no
	// leases).
	OldestStuckAge *time.Duration
	// OldestReadyAge is how long the oldest READY row that is due has waited (the relay's delay);
	// nil when nothing is due.
	OldestReadyAge *time.Duration
	CheckedAt      time.Time
	// Attention counts the rows in the format's attention states (a registry's; 0 for the seed,
	// whose DEAD and stuck rows the fields above tell).
	Attention int64
	// Records is a registry's own overview (its groups, oldest incomplete row, rate), and Format
	// its format; both nil for the seed.
	Records *RecordStats
	Format  *Format
}

// Since is the time one of the stats' ages (OldestReadyAge, OldestStuckAge) reaches back to from
// when they were read, so that stats served from a cache say the same; zero for a nil age.
func (s Stats) Since(age *time.Duration) time.Time {
	if age == nil || s.CheckedAt.IsZero() {
		return time.Time{}
	}
	return s.CheckedAt.Add(-*age)
}

// Backlog is the number of rows not yet SENT.
func (s Stats) Backlog() int64 {
	return s.Counts[Ready] + s.Counts[Processing] + s.Counts[Failed]
}

// ExactSentBelow is the table size (by the database's estimate) under which an adapter counts SENT
// exactly: the scan is cheap.
const ExactSentBelow = 200_000

// Stats returns the overview. Concurrent callers (every open browser tab refreshing the panel)
// share one in-flight query.
func (o *Outbox) Stats(ctx context.Context) (Stats, error) {
	return ops.Shared(ctx, &o.statsFlight, "stats", 30*time.Second, fmt.Sprintf("outbox %s: stats", o.name), func(ctx context.Context) (Stats, error) {
		if o.registry != nil {
			return o.registryStats(ctx)
		}
		return o.store.Stats(ctx)
	})
}
