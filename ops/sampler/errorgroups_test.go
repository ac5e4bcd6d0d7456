package sampler

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/store"
)

// deadLetters writes one dead letter per exception type to topic's partition 0, at ts.
func (b *broker) deadLetters(tb testing.TB, topic string, ts time.Time, types ...string) {
	tb.Helper()
	var recs []*kgo.Record
	for _, typ := range types {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte("v"), Timestamp: ts, Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-exception-fqcn", Value: []byte(typ)},
			{Key: "kafka_dlt-exception-message", Value: []byte(typ + ": failed\x00\xff")},
		}})
	}
	if err := b.prod.ProduceSync(ctxT(tb), recs...).FirstErr(); err != nil {
		tb.Fatalf("produce: %v", err)
	}
}

// episodes is the recorded error groups by source and exception type.
func episodes(tb testing.TB, st *store.Store, since time.Time) map[string]history.ErrorGroupEpisode {
	tb.Helper()
	eps, err := st.ErrorGroupEpisodes(ctxT(tb), since, 100)
	if err != nil {
		tb.Fatalf("ErrorGroupEpisodes: %v", err)
	}
	out := map[string]history.ErrorGroupEpisode{}
	for _, e := range eps {
		out[e.Source+" "+e.ExceptionType] = e
	}
	return out
}

// A dead letter whose exception type holds a NUL byte or invalid UTF-8 (text PostgreSQL refuses)
// no longer stops the recording of new error groups: it is recorded under its cleaned type and
// the key made of it, the new group of another dead-letter topic is recorded beside it in the
// same round, and the cursors move on, so the next round records only what arrived since.
func TestErrorGroupsOfUnstorableText(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	b.topic(t, "bad.DLT", 1)
	b.topic(t, "good.DLT", 1)
	clk := newClock()
	st := openStore(t, testDSN(t))
	var logs bytes.Buffer
	s := newSampler(t, st, clk, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) },
		KafkaSource{Cluster: b.cluster(t, 5*time.Second)})

	ts := clk.Now().Add(-time.Minute).Truncate(time.Millisecond)
	b.deadLetters(t, "bad.DLT", ts, "E.Nul\x00Type", "E.\xffbad")
	b.deadLetters(t, "good.DLT", ts, "com.acme.NewException")
	sampleAfter(t, ctx, s, clk, 0)

	got := episodes(t, st, ts.Add(-time.Hour))
	want := map[string]string{ // source and exception type → key
		"kafka/main/bad.DLT E.NulType":              "E.NulType|",
		"kafka/main/bad.DLT E.\uFFFDbad":            "E.\uFFFDbad|",
		"kafka/main/good.DLT com.acme.NewException": "com.acme.NewException|",
	}
	if len(got) != len(want) {
		t.Fatalf("recorded %d groups, want %d: %v\nlog: %s", len(got), len(want), got, logs.String())
	}
	for k, key := range want {
		e, ok := got[k]
		if !ok || e.Key != key || e.Count != 1 || !e.EpisodeStart.Equal(ts) {
			t.Fatalf("group %q: %+v (recorded %v)\nlog: %s", k, e, ok, logs.String())
		}
	}
	if strings.Contains(logs.String(), "failed") {
		t.Fatalf("a round logged a failure:\n%s", logs.String())
	}

	// The next round reads only what arrived since: one more of the NUL type, counted once.
	b.deadLetters(t, "bad.DLT", ts.Add(time.Second), "E.Nul\x00Type")
	sampleAfter(t, ctx, s, clk, 10*time.Second)
	sampleAfter(t, ctx, s, clk, 10*time.Second)
	if e := episodes(t, st, ts.Add(-time.Hour))["kafka/main/bad.DLT E.NulType"]; e.Count != 2 {
		t.Fatalf("after one more record and two rounds: %+v", e)
	}
}

// refusingStore is the real store refusing every batch of error groups that holds one of a
// source: a group no cleaning makes recordable (no such record is known; this is the net below).
type refusingStore struct {
	*store.Store
	source string
	mu     sync.Mutex
	tries  int // batches that held the source's group
}

func (r *refusingStore) RecordErrorGroups(ctx context.Context, window time.Duration, sightings []history.ErrorGroupSighting) error {
	for _, g := range sightings {
		if g.Source == r.source {
			r.mu.Lock()
			r.tries++
			r.mu.Unlock()
			return fmt.Errorf("record error groups: %w", ops.ErrUnavailable)
		}
	}
	return r.Store.RecordErrorGroups(ctx, window, sightings)
}

func (r *refusingStore) attempts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tries
}

// A group the store refuses does not block the others: they are recorded in the same round and
// it is skipped, logged as an error, and not tried again. A cluster whose only new group is
// refused reads it again for a few rounds (a store in trouble), then skips it too.
func TestErrorGroupRefusedIsSkipped(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	b.topic(t, "poison.DLT", 1)
	b.topic(t, "good.DLT", 1)
	b.topic(t, "alone.DLT", 1)
	clk := newClock()
	st := openStore(t, testDSN(t))
	refusing := &refusingStore{Store: st, source: "kafka/main/poison.DLT"}
	var logs bytes.Buffer
	s, err := New(Options{Store: refusing, Kafka: []KafkaSource{{Cluster: b.cluster(t, 5*time.Second)}}, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ts := clk.Now().Add(-time.Minute).Truncate(time.Millisecond)

	t.Run("BesideOthers", func(t *testing.T) {
		b.deadLetters(t, "poison.DLT", ts, "com.acme.PoisonException")
		b.deadLetters(t, "good.DLT", ts, "com.acme.NewException")
		sampleAfter(t, ctx, s, clk, 0)
		got := episodes(t, st, ts.Add(-time.Hour))
		if _, ok := got["kafka/main/good.DLT com.acme.NewException"]; !ok || len(got) != 1 {
			t.Fatalf("recorded %v\nlog: %s", got, logs.String())
		}
		if !strings.Contains(logs.String(), `level=ERROR msg="sampler: an error group cannot be recorded and is skipped`) ||
			!strings.Contains(logs.String(), "exception_type=com.acme.PoisonException") {
			t.Fatalf("the skipped group is not logged:\n%s", logs.String())
		}
		tries := refusing.attempts()
		sampleAfter(t, ctx, s, clk, 10*time.Second)
		if refusing.attempts() != tries {
			t.Fatalf("the skipped group was read and tried again")
		}
	})

	t.Run("Alone", func(t *testing.T) {
		refusing.mu.Lock()
		refusing.source, refusing.tries = "kafka/main/alone.DLT", 0
		refusing.mu.Unlock()
		logs.Reset()
		b.deadLetters(t, "alone.DLT", ts.Add(time.Second), "com.acme.AloneException")
		for round := 1; round <= maxRefusedRounds+1; round++ {
			sampleAfter(t, ctx, s, clk, 10*time.Second)
			if want := 2 * min(round, maxRefusedRounds); refusing.attempts() != want { // the batch, then alone
				t.Fatalf("round %d: %d attempts, want %d\nlog: %s", round, refusing.attempts(), want, logs.String())
			}
		}
		if n := strings.Count(logs.String(), "they are read again next round"); n != maxRefusedRounds-1 {
			t.Fatalf("%d rounds read the group again, want %d:\n%s", n, maxRefusedRounds-1, logs.String())
		}
		if !strings.Contains(logs.String(), "exception_type=com.acme.AloneException") {
			t.Fatalf("the skipped group is not logged:\n%s", logs.String())
		}
	})
}

// A dead-letter topic deleted and created again under its name starts a new cursor: the read of
// new errors used to go on from the old topic's offsets when the new one had as many, so its first
// records were never looked at and their errors never told as new.
func TestErrorGroupsOfARecreatedTopic(t *testing.T) {
	ctx := ctxT(t)
	b := newBroker(t)
	b.topic(t, "orders.DLT", 1)
	clk := newClock()
	st := openStore(t, testDSN(t))
	s := newSampler(t, st, clk, nil, KafkaSource{Cluster: b.cluster(t, 5*time.Second)})
	ts := clk.Now().Add(-time.Minute).Truncate(time.Millisecond)
	var old []string
	for i := range 10 {
		old = append(old, fmt.Sprintf("com.acme.Old%dException", i))
	}
	b.deadLetters(t, "orders.DLT", ts, old...)
	sampleAfter(t, ctx, s, clk, 0)
	if n := len(episodes(t, st, ts.Add(-time.Hour))); n != 10 {
		t.Fatalf("%d groups after the first round; want 10", n)
	}
	if _, err := b.adm.DeleteTopics(ctx, "orders.DLT"); err != nil {
		t.Fatal(err)
	}
	b.topic(t, "orders.DLT", 1)
	// A producer that never knew the old topic's ID.
	b.prod = kfaketest.Client(t, b.kf, kgo.ProducerLinger(time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	fresh := []string{"com.acme.FirstNewException"}
	for i := range 14 {
		fresh = append(fresh, fmt.Sprintf("com.acme.Old%dException", i%10))
	}
	b.deadLetters(t, "orders.DLT", ts.Add(time.Second), fresh...) // 15 records: past the old cursor (10)
	sampleAfter(t, ctx, s, clk, 10*time.Second)
	if _, ok := episodes(t, st, ts.Add(-time.Hour))["kafka/main/orders.DLT com.acme.FirstNewException"]; !ok {
		t.Fatal("the recreated topic's first record, a new error, was not recorded")
	}
}
