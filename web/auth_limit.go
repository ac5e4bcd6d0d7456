package web

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// loginLimiter throttles failed sign-ins with one token bucket per configured user and one per
// client address (IPv6 by /64, which one host usually owns). A failure takes a token from both
// buckets; a sign-in is refused, before its password is checked, while either is empty. Buckets
// live in this replica's memory: with N replicas an attacker gets at most N times the budget.
type loginLimiter struct {
	userEvery, ipEvery time.Duration
	userBurst, ipBurst int
	now                func() time.Time

	mu    sync.Mutex
	users map[string]*rate.Limiter // only configured users, so the map is bounded
	ips   map[string]*rate.Limiter
}

// maxTrackedIPs bounds the per-address map: past it, buckets that have refilled are dropped, and
// if that is not enough the map starts over (the per-user buckets still hold).
const maxTrackedIPs = 50_000

func newLoginLimiter(userBurst int, userEvery time.Duration, ipBurst int, ipEvery time.Duration) *loginLimiter {
	return &loginLimiter{userEvery: userEvery, ipEvery: ipEvery, userBurst: userBurst, ipBurst: ipBurst,
		now: time.Now, users: map[string]*rate.Limiter{}, ips: map[string]*rate.Limiter{}}
}

// ipKey groups addresses the way one client holds them.
func ipKey(ip string) string {
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

// begin takes a token from the user's and the address's buckets for one sign-in attempt, or
// returns how long to wait when either is empty. user is "" for a name that is not configured
// (only the address counts then). Taking the tokens before the password is checked keeps a burst
// of parallel attempts within the limit. end reports the outcome: a successful sign-in gives its
// tokens back, so that only failures are counted.
func (l *loginLimiter) begin(user, ip string) (end func(ok bool), wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var lims []*rate.Limiter
	if user != "" {
		lim := l.users[user]
		if lim == nil {
			lim = rate.NewLimiter(rate.Every(l.userEvery), l.userBurst)
			l.users[user] = lim
		}
		lims = append(lims, lim)
	}
	k := ipKey(ip)
	lim := l.ips[k]
	if lim == nil {
		if len(l.ips) >= maxTrackedIPs {
			l.pruneLocked(now)
		}
		lim = rate.NewLimiter(rate.Every(l.ipEvery), l.ipBurst)
		l.ips[k] = lim
	}
	lims = append(lims, lim)
	for _, lim := range lims {
		wait = max(wait, untilToken(lim, now))
	}
	if wait > 0 {
		return nil, wait
	}
	var taken []*rate.Reservation
	for _, lim := range lims {
		taken = append(taken, lim.ReserveN(now, 1))
	}
	return func(ok bool) {
		if !ok {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, r := range taken {
			r.CancelAt(l.now())
		}
	}, 0
}

func (l *loginLimiter) pruneLocked(now time.Time) {
	for k, lim := range l.ips {
		if lim.TokensAt(now) >= float64(lim.Burst()) {
			delete(l.ips, k)
		}
	}
	if len(l.ips) >= maxTrackedIPs {
		clear(l.ips)
	}
}

// untilToken is how long until lim has a whole token.
func untilToken(lim *rate.Limiter, now time.Time) time.Duration {
	t := lim.TokensAt(now)
	if t >= 1 {
		return 0
	}
	return time.Duration((1 - t) / float64(lim.Limit()) * float64(time.Second))
}
