package waittest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatalf instead of ending the test, so that the helpers'
// failures can be checked.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

// Fatalf records the message and stops the calling goroutine, as testing.T.Fatalf does.
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r)
}

func run(t *testing.T, f func(tb testing.TB)) (failed string) {
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		failed = r.failed
	}()
	f(r)
	return ""
}

func TestForReturnsTheValueThatWasAwaited(t *testing.T) {
	var n atomic.Int32
	got := For(t, 5*time.Second, "the counter reaches 5", func() (int32, bool) {
		v := n.Add(1)
		return v, v >= 5
	})
	if got != 5 {
		t.Fatalf("got %d, want 5", got)
	}
}

func TestForFailsWithTheLastValue(t *testing.T) {
	start := time.Now()
	msg := run(t, func(tb testing.TB) {
		For(tb, 100*time.Millisecond, "the job finishes", func() (string, bool) { return "running", false })
	})
	if !strings.Contains(msg, "the job finishes: not within 100ms") || !strings.Contains(msg, "last seen: running") {
		t.Fatalf("failure %q", msg)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("gave up after %s, want about 100ms", took)
	}
}

func TestUntilReturnsAsSoonAsTheConditionHolds(t *testing.T) {
	at := time.Now().Add(150 * time.Millisecond)
	took := Until(t, 10*time.Second, "a moment passes", func() bool { return time.Now().After(at) })
	// The poll backs off to at most maxStep: it notices within one step of the condition.
	if took < 150*time.Millisecond || took > 150*time.Millisecond+maxStep+time.Second {
		t.Fatalf("waited %s for a condition true after 150ms", took)
	}
	if msg := run(t, func(tb testing.TB) { Until(tb, 50*time.Millisecond, "never", func() bool { return false }) }); msg != "never: not within 50ms" {
		t.Fatalf("failure %q", msg)
	}
}

func TestHoldsAsksThroughoutAndFailsAtTheFirstWrongMoment(t *testing.T) {
	var asked atomic.Int32
	start := time.Now()
	Holds(t, 200*time.Millisecond, "nothing happens", func() bool { asked.Add(1); return true })
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("held for %s, want the whole 200ms", took)
	}
	if asked.Load() < 3 {
		t.Fatalf("asked %d times in 200ms", asked.Load())
	}
	breaks := time.Now().Add(50 * time.Millisecond)
	start = time.Now()
	msg := run(t, func(tb testing.TB) {
		Holds(tb, 10*time.Second, "the job stays awaiting", func() bool { return time.Now().Before(breaks) })
	})
	if msg != "the job stays awaiting: no longer true" {
		t.Fatalf("failure %q", msg)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("noticed the change after %s, not at once", took)
	}
}

// Context ends within the time given, and with the test that made it.
func TestContext(t *testing.T) {
	var ctx context.Context
	t.Run("Inner", func(t *testing.T) {
		ctx = Context(t, time.Minute)
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Minute {
			t.Fatalf("deadline %v (set %v), want within a minute", d, ok)
		}
		if ctx.Err() != nil {
			t.Fatalf("ended early: %v", ctx.Err())
		}
	})
	if ctx.Err() == nil {
		t.Fatal("the context outlived its test")
	}
}

// AtOnce calls f once for each index, all of them at the same time (each waits here until every
// other has begun, which calls made one after another never would), and returns when all are done.
func TestAtOnce(t *testing.T) {
	const n = 8
	var begun sync.WaitGroup
	begun.Add(n)
	all := make(chan struct{})
	go func() { begun.Wait(); close(all) }()
	calls := make([]int, n)
	AtOnce(n, func(i int) {
		begun.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			t.Errorf("call %d: the other calls did not begin alongside it", i)
		}
		calls[i]++
	})
	for i, c := range calls {
		if c != 1 {
			t.Errorf("f(%d) called %d times, want once", i, c)
		}
	}
}
