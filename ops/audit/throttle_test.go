package audit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

type rowLog struct {
	mu   sync.Mutex
	rows []Entry
}

func (m *rowLog) RecordAudit(_ context.Context, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = append(m.rows, e)
	return nil
}

func (m *rowLog) all() []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Entry(nil), m.rows...)
}

// TestThrottleBoundsUnaccountableRows: one client's thousand refused anonymous requests write
// PerAddress rows and, when the window ends, one row counting the rest with the actions they
// asked; many addresses together write Total; a signed-in person's refusals and everyone's
// successes are written whole; a new window counts afresh.
func TestThrottleBoundsUnaccountableRows(t *testing.T) {
	log := &rowLog{}
	th := NewThrottle(log, 5, 12, nil)
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	th.now = func() time.Time { return now }
	ctx := context.Background()
	anon := func(ip, action string) Entry {
		return Entry{Actor: "anonymous", SourceIP: ip, Action: action, Outcome: OutcomeDenied, Reason: "not signed in"}
	}
	for i := range 1000 {
		action := "POST /api/v1/replays"
		if i%2 == 1 {
			action = "POST /login"
		}
		if err := th.RecordAudit(ctx, anon("203.0.113.7", action)); err != nil {
			t.Fatal(err)
		}
	}
	// A signed-in person's refusal and a sign-in are the person's: never counted away.
	for range 30 {
		_ = th.RecordAudit(ctx, Entry{Actor: "vera", Role: "viewer", SourceIP: "203.0.113.7", Action: "POST /x", Outcome: OutcomeDenied})
		_ = th.RecordAudit(ctx, Entry{Actor: "vera", SourceIP: "203.0.113.7", Action: "auth.login", Outcome: OutcomeOK})
	}
	// An IPv6 client is one /64, whatever address of it it sends from.
	for i := range 40 {
		_ = th.RecordAudit(ctx, anon(fmt.Sprintf("2001:db8:1:2::%x", i+1), "POST /login"))
	}
	rows := log.all()
	count := func(pred func(Entry) bool) (n int) {
		for _, e := range rows {
			if pred(e) {
				n++
			}
		}
		return n
	}
	if n := count(func(e Entry) bool { return e.SourceIP == "203.0.113.7" && e.Actor == "anonymous" }); n != 5 {
		t.Errorf("%d rows of the IPv4 client one by one, want 5", n)
	}
	if n := count(func(e Entry) bool { return strings.HasPrefix(e.SourceIP, "2001:db8:1:2::") }); n != 5 {
		t.Errorf("%d rows of the IPv6 /64 one by one, want 5", n)
	}
	if n := count(func(e Entry) bool { return e.Actor == "vera" }); n != 60 {
		t.Errorf("%d rows of vera, want all 60", n)
	}
	// Many addresses, one each: the window's total bounds them (2 more after the 10 above).
	for i := range 100 {
		_ = th.RecordAudit(ctx, anon(fmt.Sprintf("198.51.100.%d", i), "POST /login"))
	}
	rows = log.all()
	if n := count(func(e Entry) bool { return strings.HasPrefix(e.SourceIP, "198.51.100.") }); n != 2 {
		t.Errorf("%d rows of the spray, want 2 (the total of 12 a window)", n)
	}

	th.Flush()
	rows = log.all()
	left := map[string]Entry{}
	for _, e := range rows {
		if e.Action == "audit.left_out" {
			left[e.SourceIP] = e
		}
	}
	if e, ok := left["203.0.113.7"]; !ok || *e.Count != 995 || e.Outcome != OutcomeDenied ||
		e.Detail["actions"].(map[string]any)["POST /login"] != int64(498) || !strings.Contains(e.Reason, "995 more") {
		t.Errorf("the IPv4 client's left-out row: %+v", e)
	}
	if e, ok := left["2001:db8:1:2::/64"]; !ok || *e.Count != 35 {
		t.Errorf("the IPv6 client's left-out row: %+v", e)
	}
	var spray int64
	for ip, e := range left {
		if strings.HasPrefix(ip, "198.51.100.") || ip == "" {
			spray += *e.Count
		}
	}
	if spray != 98 || len(left) > maxAggregated+1 {
		t.Errorf("the spray's left-out rows count %d in %d rows, want 98 in at most %d", spray, len(left), maxAggregated+1)
	}

	// The next window counts afresh.
	now = now.Add(time.Minute)
	before := len(log.all())
	for range 10 {
		_ = th.RecordAudit(ctx, anon("203.0.113.7", "POST /login"))
	}
	if n := len(log.all()) - before; n != 5 {
		t.Errorf("%d rows in the next window, want 5", n)
	}
}

// TestThrottleFlushesWhenTheWindowEnds: the left-out row is written when the window ends, without
// another request to trigger it.
func TestThrottleFlushesWhenTheWindowEnds(t *testing.T) {
	log := &rowLog{}
	th := NewThrottle(log, 1, 10, nil)
	th.window = 200 * time.Millisecond
	for range 4 {
		_ = th.RecordAudit(context.Background(), Entry{Actor: "anonymous", SourceIP: "192.0.2.1", Action: "POST /login", Outcome: OutcomeDenied})
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range log.all() {
			if e.Action == "audit.left_out" && *e.Count == 3 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no left-out row after the window: %+v", log.all())
}
