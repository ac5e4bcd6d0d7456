package web

import (
	"sync"
	"time"

	"github.com/redrive/redrive/ops/audit"
)

// loginLimiter throttles failed sign-ins, and only failures: a correct password costs nothing,
// and it clears its user's failures from its address. Its buckets:
//   - one per user and client address (IPv6 by /64, which one host usually owns): someone guessing
//     a user's password from elsewhere does not throttle that user's own address, so nobody can
//     keep a person locked out from afar;
//   - one per client address, whatever the user: one address spraying many users;
//   - one per user for addresses it has not signed in from lately (newAddressFor): many addresses
//     guessing one user's password; the addresses the person signed in from are not in it.
//
// Buckets live in this replica's memory: with N replicas an attacker gets at most N times the
// budget.
type loginLimiter struct {
	userAddr, addr, userNew rateLimit
	now                     func() time.Time

	mu        sync.Mutex
	userAddrs map[string]*bucket // user + "\x00" + address
	addrs     map[string]*bucket
	usersNew  map[string]*bucket              // only configured users, so the map is bounded
	known     map[string]map[string]time.Time // user → addresses it signed in from → when
}

// rateLimit is one kind of token bucket: burst failures at once, then one more per every.
type rateLimit struct {
	burst int
	every time.Duration
}

// bucket is a token bucket's state: tokens at at.
type bucket struct {
	tokens float64
	at     time.Time
}

// Bounds of what the limiter remembers.
const (
	// maxTracked bounds each per-address map: past it, buckets that have refilled are dropped,
	// and if that is not enough the map starts over (the per-user buckets still hold).
	maxTrackedIPs = 50_000
	// knownFor is how long an address a user signed in from stays out of the user's bucket for
	// new addresses; maxKnown is how many such addresses a user keeps.
	knownFor = 30 * 24 * time.Hour
	maxKnown = 16
)

// newLoginLimiter makes the limiter of auth.login_limits: userAddr per user and address
// (per_user), addr per address (per_ip), userNew per user from addresses it has not signed in
// from (per_user_new_addresses).
func newLoginLimiter(userAddr, addr, userNew rateLimit) *loginLimiter {
	return &loginLimiter{userAddr: userAddr, addr: addr, userNew: userNew, now: time.Now,
		userAddrs: map[string]*bucket{}, addrs: map[string]*bucket{}, usersNew: map[string]*bucket{},
		known: map[string]map[string]time.Time{}}
}

// begin takes a token from each bucket of one sign-in attempt, or returns how long to wait when
// one is empty. user is "" for a name that is not configured (only the address counts then).
// Taking the tokens before the password is checked keeps a burst of parallel attempts within the
// limit; end reports the outcome: a correct password gives them back and clears the user's
// failures from this address, so that only failures count.
func (l *loginLimiter) begin(user, ip string) (end func(ok bool), wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	k := audit.AddressKey(ip)
	type take struct {
		b    *bucket
		rate rateLimit
	}
	var takes []take
	takes = append(takes, take{l.bucketLocked(l.addrs, k, l.addr, now), l.addr})
	if user != "" {
		takes = append(takes, take{l.bucketLocked(l.userAddrs, user+"\x00"+k, l.userAddr, now), l.userAddr})
		if !l.knownLocked(user, k, now) {
			b := l.usersNew[user]
			if b == nil {
				b = &bucket{tokens: float64(l.userNew.burst), at: now}
				l.usersNew[user] = b
			}
			takes = append(takes, take{b, l.userNew})
		}
	}
	for _, t := range takes {
		t.b.refill(t.rate, now)
		if t.b.tokens < 1 {
			wait = max(wait, time.Duration((1-t.b.tokens)*float64(t.rate.every)))
		}
	}
	if wait > 0 {
		return nil, wait
	}
	for _, t := range takes {
		t.b.tokens--
	}
	return func(ok bool) {
		if !ok {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		now := l.now()
		for _, t := range takes {
			t.b.refill(t.rate, now)
			t.b.tokens = min(float64(t.rate.burst), t.b.tokens+1)
		}
		if user != "" {
			// The person is who they say, from here: their failures from here are forgiven, and
			// this address is theirs for the bucket of new addresses.
			delete(l.userAddrs, user+"\x00"+k)
			l.rememberLocked(user, k, now)
		}
	}, 0
}

// bucketLocked is m's bucket for key, made full when new.
func (l *loginLimiter) bucketLocked(m map[string]*bucket, key string, r rateLimit, now time.Time) *bucket {
	b := m[key]
	if b == nil {
		if len(m) >= maxTrackedIPs {
			pruneFull(m, r, now)
		}
		b = &bucket{tokens: float64(r.burst), at: now}
		m[key] = b
	}
	return b
}

// knownLocked reports whether user signed in from address k within knownFor.
func (l *loginLimiter) knownLocked(user, k string, now time.Time) bool {
	at, ok := l.known[user][k]
	return ok && now.Sub(at) < knownFor
}

// rememberLocked records that user signed in from address k, keeping the newest maxKnown.
func (l *loginLimiter) rememberLocked(user, k string, now time.Time) {
	m := l.known[user]
	if m == nil {
		m = map[string]time.Time{}
		l.known[user] = m
	}
	m[k] = now
	for len(m) > maxKnown {
		oldest, first := "", true
		for a, t := range m {
			if first || t.Before(m[oldest]) {
				oldest, first = a, false
			}
		}
		delete(m, oldest)
	}
}

// refill adds the tokens earned since the bucket was last read, up to the burst.
func (b *bucket) refill(r rateLimit, now time.Time) {
	if now.After(b.at) {
		b.tokens = min(float64(r.burst), b.tokens+float64(now.Sub(b.at))/float64(r.every))
		b.at = now
	}
}

// pruneFull drops the buckets that have refilled; if that is not enough, m starts over.
func pruneFull(m map[string]*bucket, r rateLimit, now time.Time) {
	for k, b := range m {
		if b.refill(r, now); b.tokens >= float64(r.burst) {
			delete(m, k)
		}
	}
	if len(m) >= maxTrackedIPs {
		clear(m)
	}
}
