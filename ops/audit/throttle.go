package audit

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// Throttle records, at a bounded rate, the rows of requests nobody is accountable for: refused
// anonymous requests, failed sign-ins and the refusals of people signed in without a role
// (Unaccountable). Any client can send those as fast as it likes, and the log refuses DELETE: one
// client once wrote about 19 GB a day. Each window (a minute) at most PerAddress such rows per
// client address (an IPv6 /64) — and as many per person without a role, whatever address they
// come from — and Total in all are written one by one; past that they are counted, and when the
// window ends one row per address or person (for the first maxAggregated; the rest together,
// address "*") says how many were left out, between when, and which actions they asked. Every
// other entry — a person's with a role — is written as it comes. Safe for concurrent use.
type Throttle struct {
	log        Recorder
	perAddress int
	total      int
	window     time.Duration
	now        func() time.Time
	errs       *slog.Logger

	mu      sync.Mutex
	start   time.Time      // of the current window
	written int            // rows written one by one in it
	counts  map[string]int // rows asked per address in it
	left    map[string]*leftOut
	timer   *time.Timer
}

// leftOut is what one address's (or person's) rows left out of a window add up to.
type leftOut struct {
	n           int64
	first, last time.Time
	actor       string
	addr        string // the address they came from; "" when more than one
	actions     map[string]int64
}

// Bounds of what a window keeps track of.
const (
	// maxTracked is how many addresses a window counts one by one; past it, new addresses share
	// one count (and one aggregated row), so a spray of addresses cannot grow the map.
	maxTracked = 10_000
	// maxAggregated is how many addresses get an aggregated row of their own per window.
	maxAggregated = 50
	// maxActions is how many distinct actions an aggregated row lists.
	maxActions = 10
	// anyAddress is the address of what is aggregated past maxTracked or maxAggregated.
	anyAddress = "*"
	// personKey prefixes the count of a person without a role (an address holds no space).
	personKey = "person "
	// noRole is the role of a person signed in whom no role was given (access.Public).
	noRole = "none"
)

// NewThrottle bounds log's unaccountable rows to perAddress a minute per client address and total
// a minute in all (audit.anonymous_per_address, audit.anonymous_per_minute). errs receives what
// cannot be written (nil: discarded).
func NewThrottle(log Recorder, perAddress, total int, errs *slog.Logger) *Throttle {
	if errs == nil {
		errs = slog.New(slog.DiscardHandler)
	}
	return &Throttle{log: log, perAddress: perAddress, total: total, window: time.Minute, now: time.Now, errs: errs,
		counts: map[string]int{}, left: map[string]*leftOut{}}
}

// Unaccountable reports whether e is a row the throttle bounds: a refusal or failure with no
// identified role (anonymous, a wrong password, an unknown token), or of a person signed in
// without one (role "none": a proxy sign-in when auth.proxy.default_role is empty), who may do
// nothing and can be refused as fast as anyone.
func Unaccountable(e Entry) bool {
	return e.Outcome == OutcomeDenied && (e.Role == "" || e.Role == noRole)
}

// RecordAudit writes e, unless it is unaccountable and its address, its person without a role (or
// everyone) has written its share of this window: then it is counted into the window's aggregated
// row, and nil is returned.
func (t *Throttle) RecordAudit(ctx context.Context, e Entry) error {
	if !Unaccountable(e) {
		return t.log.RecordAudit(ctx, e)
	}
	now := t.now()
	addr := AddressKey(e.SourceIP)
	t.mu.Lock()
	if t.start.IsZero() || now.Sub(t.start) >= t.window {
		t.rollLocked(now)
	}
	within := t.countLocked(addr)
	key := addr
	if e.Role == noRole {
		// A person's share too, wherever they come from, and their left-out row names them.
		key = personKey + e.Actor
		within = t.countLocked(key) && within
	}
	if within && t.written < t.total {
		t.written++
		t.mu.Unlock()
		return t.log.RecordAudit(ctx, e)
	}
	if _, ok := t.left[key]; !ok && len(t.left) >= maxAggregated {
		key = anyAddress
	}
	l := t.left[key]
	if l == nil {
		l = &leftOut{first: now, actor: e.Actor, addr: addr, actions: map[string]int64{}}
		t.left[key] = l
	}
	l.n++
	l.last = now
	if l.addr != addr {
		l.addr = ""
	}
	if _, ok := l.actions[e.Action]; ok || len(l.actions) < maxActions {
		l.actions[e.Action]++
	}
	if l.actor != e.Actor {
		l.actor = "anonymous"
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(t.start.Add(t.window).Sub(now), t.Flush)
	}
	t.mu.Unlock()
	return nil
}

// countLocked counts one row of key (an address or a person) and reports whether it is within
// key's share of the window. Past maxTracked keys, a new one shares anyAddress's count.
func (t *Throttle) countLocked(key string) bool {
	if _, ok := t.counts[key]; !ok && len(t.counts) >= maxTracked {
		key = anyAddress
	}
	t.counts[key]++
	return t.counts[key] <= t.perAddress
}

// rollLocked starts a window at now, writing what the last one left out.
func (t *Throttle) rollLocked(now time.Time) {
	if len(t.left) > 0 {
		rows := t.aggregatesLocked()
		go t.write(rows)
	}
	t.start, t.written = now, 0
	clear(t.counts)
}

// Flush writes the aggregated rows of what the current window left out so far, and starts the
// next count for them: the window's timer calls it; tests and shutdown may too.
func (t *Throttle) Flush() {
	t.mu.Lock()
	rows := t.aggregatesLocked()
	t.mu.Unlock()
	t.write(rows)
}

// aggregatesLocked takes the rows of what was left out, emptying the count.
func (t *Throttle) aggregatesLocked() []Entry {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	rows := make([]Entry, 0, len(t.left))
	for _, addr := range slices.Sorted(maps.Keys(t.left)) {
		l := t.left[addr]
		n := l.n
		ip, role, who := addr, "", "refused anonymous or failed requests from "+addr
		switch {
		case addr == anyAddress:
			ip, who = "", "refused anonymous or failed requests from addresses past the first ones counted"
		case strings.HasPrefix(addr, personKey):
			ip, role, who = l.addr, noRole, "refused requests of "+l.actor+", signed in without a role,"
			if l.addr != "" {
				who += " from " + l.addr
			}
		}
		actions := map[string]any{}
		for a, c := range l.actions {
			actions[a] = c
		}
		rows = append(rows, Entry{Actor: l.actor, Role: role, SourceIP: ip, Action: "audit.left_out", Target: "audit", Count: &n,
			Outcome: OutcomeDenied,
			Reason: fmt.Sprintf("%d more %s between %s and %s were counted, not recorded one by one "+
				"(audit.anonymous_per_address %d, audit.anonymous_per_minute %d)", n, who, l.first.UTC().Format(time.RFC3339),
				l.last.UTC().Format(time.RFC3339), t.perAddress, t.total),
			Detail: map[string]any{"from": l.first.UTC(), "to": l.last.UTC(), "actions": actions}})
	}
	clear(t.left)
	return rows
}

func (t *Throttle) write(rows []Entry) {
	for _, e := range rows {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		if err := t.log.RecordAudit(ctx, e); err != nil {
			t.errs.Error("audit: the count of left-out requests could not be written", "err", err, "address", e.SourceIP, "count", *e.Count)
		}
		cancel()
	}
}

// AddressKey groups addresses the way one client holds them: an IPv6 address by its /64. The
// audit throttle and the sign-in limiter count by it.
func AddressKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
