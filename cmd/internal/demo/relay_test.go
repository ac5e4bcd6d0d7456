package demo

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
)

// The relay adds an event every second and moves the outbox along: against the seeded outbox it
// has written new READY events (and claimed some) within a few seconds, and logged nothing.
func TestRelayCreatesEvents(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := SeedOutbox(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer // read once the relay has returned
	relayCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	brokers := kfaketest.Cluster(t, kfake.SeedTopics(3, OrdersTopic)).ListenAddrs()
	go func() { defer close(done); RunRelay(relayCtx, dsn, brokers, slog.New(slog.NewTextHandler(&logs, nil))) }()
	halt := sync.OnceFunc(func() { stop(); <-done })
	defer halt()

	deadline := time.Now().Add(10 * time.Second)
	for {
		n := pgtest.Value[int64](t, dsn, `SELECT count(*) FROM outbox_event WHERE event_id LIKE 'evt-live-%'`)
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			halt()
			t.Fatalf("after 10 s the relay has written %d new event(s); its log:\n%s", n, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	payload := pgtest.Value[string](t, dsn, `SELECT payload FROM outbox_event WHERE event_id LIKE 'evt-live-%' ORDER BY id LIMIT 1`)
	if !strings.Contains(payload, `"messageId" : "evt-live-`) && !strings.Contains(payload, `"messageId": "evt-live-`) {
		t.Errorf("payload %s: want the event's messageId in it", payload)
	}
	halt()
	if s := logs.String(); s != "" {
		t.Errorf("the relay logged errors:\n%s", s)
	}
}

// A relay whose statements fail logs each distinct error once, not every second.
func TestRelayLogsAnErrorOnce(t *testing.T) {
	dsn := pgtest.NewDatabase(t) // no outbox table: every statement fails the same way
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	RunRelay(ctx, dsn, kfaketest.Cluster(t, kfake.SeedTopics(3, OrdersTopic)).ListenAddrs(), slog.New(slog.NewTextHandler(&logs, nil)))
	s := logs.String()
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "insert an event") || !strings.Contains(lines[1], "claim events") ||
		strings.Count(s, `relation \"outbox_event\" does not exist`) != 2 {
		t.Errorf("in 3.5 s, want the insert's and the claim's error once each:\n%s", s)
	}
}
