// Package waittest lets a test wait for a condition instead of the wall clock: it polls, quickly at
// first and then less often, and fails the test naming what it waited for (and the last state seen)
// when the condition does not come within the time given. A test that sleeps a fixed time either
// waits longer than needed or fails on a loaded machine; a poll does neither.
package waittest

import (
	"context"
	"sync"
	"testing"
	"time"
)

// The poll starts at firstStep so that a fast condition costs little, and backs off to maxStep so
// that a slow one (a job of 100,000 messages) does not hammer the service it asks.
const (
	firstStep = 10 * time.Millisecond
	maxStep   = 250 * time.Millisecond
)

// For calls get until it reports done and returns the last value. After within, it fails the test
// with what and the last value, so that the failure says where things stood.
func For[T any](tb testing.TB, within time.Duration, what string, get func() (T, bool)) T {
	tb.Helper()
	deadline := time.Now().Add(within)
	step := firstStep
	for {
		v, done := get()
		if done {
			return v
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s (last seen: %+v)", what, within, v)
		}
		time.Sleep(step)
		step = min(2*step, maxStep)
	}
}

// Until waits until cond holds, failing the test with what after within. It returns how long it
// waited, for tests that bound how quickly something happens.
func Until(tb testing.TB, within time.Duration, what string, cond func() bool) time.Duration {
	tb.Helper()
	start := time.Now()
	deadline := start.Add(within)
	step := firstStep
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(step)
		step = min(2*step, maxStep)
	}
	return time.Since(start)
}

// Holds checks that cond stays true for the whole of d, failing the test with what as soon as it
// does not. It is for the tests whose point is that something does not happen (an awaiting job is
// not claimed, a silenced problem is not notified): they must give it time to happen, and asking
// throughout that time fails at the first wrong moment instead of only at the end.
func Holds(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for {
		if !cond() {
			tb.Fatalf("%s: no longer true", what)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(min(firstStep*2, time.Until(deadline)+time.Millisecond))
	}
}

// Context is a context for the calls a test makes: it ends within d, so that a call that hangs
// fails the test instead of blocking it until the binary's timeout, or when the test ends.
func Context(tb testing.TB, within time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	tb.Cleanup(cancel)
	return ctx
}

// AtOnce calls f(0) … f(n-1), each in its own goroutine, releases them together so that they
// race each other (the concurrent applies, browses and claims a test wants to collide), and
// returns when every call has returned.
func AtOnce(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}
