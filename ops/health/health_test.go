package health

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/paths/links"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func group(name string, code lag.StatusCode, total int64) lag.Group {
	g := lag.Group{Status: lag.Status{Code: code, Reason: "partition orders/0 lag grows"}}
	g.Name, g.TotalLag = name, total
	return g
}

func TestKafkaProblems(t *testing.T) {
	snap := lag.Snapshot{Cluster: "main", Groups: []lag.Group{
		group("ok", lag.StatusOK, 5), group("idle", lag.StatusEmpty, 0), group("lagging", lag.StatusWarn, 1500),
		group("stuck", lag.StatusStall, 10), group("behind-empty", lag.StatusEmpty, 3),
	}, DeadLetterTopics: []kafka.DLTopic{
		{Topic: "orders.DLT", Records: 1234, NewestAt: now.Add(-90 * time.Second)},
		{Topic: "old.DLT", Records: 3, NewestAt: now.Add(-2 * time.Hour)},
		{Topic: "orders.retry", Retry: true, Records: 3, NewestAt: now},
		{Topic: "empty.DLT"},
	}}
	got := KafkaProblems("main", snap, nil, now)
	want := []struct{ key, severity, title, link string }{
		{"kafka_group/main/lagging", Warning, "main/lagging is WARN (total lag 1,500): partition orders/0 lag grows", "/kafka/main/groups/lagging"},
		{"kafka_group/main/stuck", Critical, "main/stuck is STALL (total lag 10): partition orders/0 lag grows", "/kafka/main/groups/stuck"},
		{"kafka_group/main/behind-empty", Warning, "main/behind-empty is EMPTY (total lag 3): partition orders/0 lag grows", "/kafka/main/groups/behind-empty"},
		{"dead_letters/kafka/main/orders.DLT", Warning, "orders.DLT (main) holds 1,234 dead letters; the newest arrived 1 min 30 s ago", "/kafka/main/topics/orders.DLT/errors"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if g := got[i]; g.Key != w.key || g.Severity != w.severity || g.Title != w.title || links.To(g.Page, g.Labels) != w.link {
			t.Errorf("problem %d = %+v, want %+v", i, g, w)
		}
	}
	if got[3].Labels["topic"] != "orders.DLT" || got[3].Labels["cluster"] != "main" || !got[3].Since.Equal(now.Add(-90*time.Second)) {
		t.Errorf("dead letters labels/since: %+v", got[3])
	}
	t.Run("SinceIsTheStatus", func(t *testing.T) {
		// A stuck group's problem began when its offsets last moved, not when it was evaluated; a
		// status that does not say (EMPTY) leaves since unknown rather than now.
		stuck := group("stuck", lag.StatusStall, 10)
		stuck.Status.Since = now.Add(-12 * time.Minute)
		got := KafkaProblems("main", lag.Snapshot{Groups: []lag.Group{stuck, group("behind-empty", lag.StatusEmpty, 3)}}, nil, now)
		if len(got) != 2 || !got[0].Since.Equal(stuck.Status.Since) || !got[1].Since.IsZero() {
			t.Errorf("since: %v and %v, want %v and unknown", got[0].Since, got[1].Since, stuck.Status.Since)
		}
	})
	t.Run("Unavailable", func(t *testing.T) {
		got := KafkaProblems("main", lag.Snapshot{}, errors.New("store down"), now)
		if len(got) != 1 || got[0].Key != "kafka_unavailable/main" || got[0].Severity != Critical {
			t.Fatalf("%+v", got)
		}
		failed := KafkaProblems("main", lag.Snapshot{Error: "dial tcp: refused"}, nil, now)
		if len(failed) != 1 || failed[0].Key != "kafka_unavailable/main" || failed[0].Title != "Kafka main: the last sample failed: dial tcp: refused" {
			t.Fatalf("%+v", failed)
		}
	})
}

func TestKeysAreStable(t *testing.T) {
	a := KafkaProblems("main", lag.Snapshot{Groups: []lag.Group{group("g", lag.StatusWarn, 10)}}, nil, now)
	b := KafkaProblems("main", lag.Snapshot{Groups: []lag.Group{group("g", lag.StatusStop, 99999)}}, nil, now.Add(time.Minute))
	if a[0].Key != b[0].Key || a[0].Title == b[0].Title {
		t.Fatalf("the key must stay and the title follow the numbers: %q %q / %q %q", a[0].Key, a[0].Title, b[0].Key, b[0].Title)
	}
}

func TestRabbitProblems(t *testing.T) {
	q := func(name string, dlq bool, ready int64, growing, retry bool) queues.Queue {
		var r queues.Queue
		r.Name, r.Vhost, r.IsDeadLetterQueue, r.Ready, r.Growing, r.Retry = name, "/", dlq, ready, growing, retry
		if growing {
			r.Growth = "ready 10 → 40 in 45s"
		}
		return r
	}
	got := RabbitProblems("rmq", queues.Snapshot{Queues: []queues.Queue{
		q("orders.dlq", true, 12, true, false), q("empty.dlq", true, 0, false, false), q("work", false, 40, true, false),
		q("work.retry", false, 40, true, true),
	}}, nil, now)
	if len(got) != 2 {
		t.Fatalf("%+v", got)
	}
	if got[0].Key != "dead_letters/rabbitmq/rmq///orders.dlq" || got[0].Title != "orders.dlq holds 12 dead letters and keeps growing (ready 10 → 40 in 45s)" ||
		links.To(got[0].Page, got[0].Labels) != "/rabbitmq/rmq/queues/%2F/orders.dlq/messages" || got[0].Labels["queue"] != "orders.dlq" {
		t.Errorf("dlq: %+v", got[0])
	}
	if got[1].Kind != KindQueueGrowing || got[1].Title != "work (rmq) keeps growing: ready 10 → 40 in 45s" {
		t.Errorf("growing: %+v", got[1])
	}
	if !got[0].Since.IsZero() {
		t.Errorf("a DLQ with no sample that saw it empty: since %v, want none", got[0].Since)
	}
	held := q("orders.dlq", true, 12, false, false)
	held.HeldSince = now.Add(-40 * time.Minute)
	if got := RabbitProblems("rmq", queues.Snapshot{Queues: []queues.Queue{held}}, nil, now); len(got) != 1 || !got[0].Since.Equal(held.HeldSince) {
		t.Errorf("a DLQ holding messages since 40 min ago: %+v", got)
	}
	// An auto-delete DLQ's messages are not browsed (a read would delete the queue): the problem
	// links its queue page, which says so, not a messages page that only refuses.
	gone := q("tmp.dlq", true, 3, false, false)
	gone.AutoDelete = true
	if got := RabbitProblems("rmq", queues.Snapshot{Queues: []queues.Queue{gone}}, nil, now); len(got) != 1 ||
		links.To(got[0].Page, got[0].Labels) != "/rabbitmq/rmq/queues/%2F/tmp.dlq" {
		t.Errorf("an auto-delete DLQ: %+v", got)
	}
}

// One dead letter reads as one: the overview said "qa.dlq holds 1 dead letters" and "orders.DLT
// (main) holds 1 open dead letters (of 3)".
func TestOneDeadLetterReadsSingular(t *testing.T) {
	var one queues.Queue
	one.Name, one.Vhost, one.IsDeadLetterQueue, one.Ready = "one.dlq", "/", true, 1
	if got := RabbitProblems("rmq", queues.Snapshot{Queues: []queues.Queue{one}}, nil, now); len(got) != 1 || got[0].Title != "one.dlq holds 1 dead letter" {
		t.Errorf("queue: %+v", got)
	}
	got := KafkaProblems("main", lag.Snapshot{DeadLetterTopics: []kafka.DLTopic{
		{Topic: "a.DLT", Records: 1, NewestAt: now.Add(-time.Minute)},
		{Topic: "b.DLT", Records: 3, Settled: 2, NewestAt: now.Add(-time.Minute)},
	}}, nil, now)
	if len(got) != 2 || got[0].Title != "a.DLT (main) holds 1 dead letter; the newest arrived 1 min ago" ||
		got[1].Title != "b.DLT (main) holds 1 open dead letter (of 3); the newest arrived 1 min ago" {
		t.Errorf("topics: %+v", got)
	}
}

func TestOutboxProblems(t *testing.T) {
	age, stuckFor := 10*time.Minute, 3*time.Minute
	read := now.Add(-20 * time.Second) // served from the cache: the ages are as of then
	st := outbox.Stats{StuckLeases: 2, Counts: map[outbox.Status]int64{outbox.Dead: 1200}, OldestReadyAge: &age, OldestStuckAge: &stuckFor, CheckedAt: read}
	got := OutboxProblems("orders", st, 0, nil, 5*time.Minute, now)
	want := []struct{ key, title, link string }{
		{"outbox_stuck/orders", "Outbox orders: 2 PROCESSING event(s) with an expired lease", "/outboxes/orders?stuck=true"},
		{"outbox_dead/orders", "Outbox orders: 1,200 DEAD event(s) waiting for an operator", "/outboxes/orders?status=DEAD"},
		{"outbox_backlog/orders", "Outbox orders: the oldest due READY event has waited 10 min", "/outboxes/orders?status=READY"},
	}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i, w := range want {
		if got[i].Key != w.key || got[i].Title != w.title || links.To(got[i].Page, got[i].Labels) != w.link {
			t.Errorf("%d: %+v want %+v", i, got[i], w)
		}
	}
	if !got[2].Since.Equal(read.Add(-age)) || !got[0].Since.Equal(read.Add(-stuckFor)) || !got[1].Since.IsZero() {
		t.Errorf("since: backlog %v, stuck %v, dead %v; want %v, %v and unknown", got[2].Since, got[0].Since, got[1].Since, read.Add(-age), read.Add(-stuckFor))
	}
	// DEAD events people marked resolved or ignored wait for nobody: only the open ones count.
	dead := outbox.Stats{Counts: map[outbox.Status]int64{outbox.Dead: 1200}}
	if got := OutboxProblems("orders", dead, 200, nil, time.Hour, now); len(got) != 1 ||
		got[0].Title != "Outbox orders: 1,000 open DEAD event(s) (of 1,200) waiting for an operator" {
		t.Errorf("some settled: %+v", got)
	}
	if got := OutboxProblems("orders", dead, 1200, nil, time.Hour, now); len(got) != 0 {
		t.Errorf("every DEAD event settled is no problem: %+v", got)
	}
	if got := OutboxProblems("orders", outbox.Stats{OldestReadyAge: &age}, 0, nil, time.Hour, now); len(got) != 0 {
		t.Errorf("a young backlog is no problem: %+v", got)
	}
	if got := OutboxProblems("orders", outbox.Stats{}, 0, errors.New("refused"), time.Hour, now); len(got) != 1 || got[0].Kind != KindOutboxUnavailable {
		t.Errorf("%+v", got)
	}
}

func TestReplayProblems(t *testing.T) {
	fin := now.Add(-time.Hour)
	old := now.Add(-48 * time.Hour)
	jobs := []replay.Job{
		{ID: "j1", Status: replay.JobRunning, Actor: "ann", Total: 10, Published: 3, CreatedAt: now},
		{ID: "j2", Status: replay.JobAwaiting, Actor: "bob", Total: 4, CreatedAt: now},
		{ID: "j3", Status: replay.JobDone, Actor: "ann", Published: 9, Failed: 1, CreatedAt: fin, FinishedAt: &fin},
		{ID: "j4", Status: replay.JobCancelled, Actor: "ann", Total: 10, Published: 2, CreatedAt: fin, FinishedAt: &fin},
		{ID: "j5", Status: replay.JobFailed, Actor: "ann", Error: "broker gone", CreatedAt: fin, FinishedAt: &fin},
		{ID: "j6", Status: replay.JobDone, Actor: "ann", CreatedAt: old, FinishedAt: &old},
	}
	var kinds []string
	for _, p := range ReplayProblems(jobs, nil, now) {
		kinds = append(kinds, p.Key)
	}
	want := []string{"replay_running/j1", "replay_awaiting_approval/j2", "replay_failures/j3", "replay_done/j3", "replay_cancelled/j4", "replay_failed/j5"}
	if len(kinds) != len(want) {
		t.Fatalf("got %v want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("got %v want %v", kinds, want)
		}
	}
	if p := (Problem{Kind: KindReplayDone}); !p.Notice() {
		t.Error("a job's outcome is a notice")
	}
}

type fixedKafka map[string]lag.Snapshot

func (f fixedKafka) LatestKafka(_ context.Context, c string) (lag.Snapshot, error) {
	s, ok := f[c]
	if !ok {
		return s, errors.New("no snapshot")
	}
	return s, nil
}

func TestMonitor(t *testing.T) {
	m := NewMonitor(Sources{
		Clusters: []string{"main", "gone"},
		Kafka:    fixedKafka{"main": {Groups: []lag.Group{group("g", lag.StatusWarn, 10)}}},
		Checks: []Check{{Name: "store", Ping: func(context.Context) error { return nil }},
			{Name: "kafka/gone", Ping: func(context.Context) error { return errors.New("refused") }}},
		Now: func() time.Time { return now },
	})
	r := m.Evaluate(context.Background())
	var keys []string
	for _, p := range r.Problems {
		keys = append(keys, p.Key)
	}
	// Worst first, in source order within a severity.
	want := []string{"kafka_unavailable/gone", "dependency_down/kafka/gone", "kafka_group/main/g"}
	if len(keys) != len(want) || keys[0] != want[0] || keys[1] != want[1] || keys[2] != want[2] {
		t.Fatalf("got %v want %v", keys, want)
	}
	// A check's error without a message for people (ops.Message) is not shown: it may be a driver's.
	if len(r.Dependencies) != 2 || !r.Dependencies[0].OK || r.Dependencies[1].Error != noAnswer {
		t.Fatalf("%+v", r.Dependencies)
	}
}

func TestNewErrorGroupProblems(t *testing.T) {
	ep := func(source, typ string, start time.Time) history.ErrorGroupEpisode {
		return history.ErrorGroupEpisode{ErrorGroupSighting: history.ErrorGroupSighting{Source: source, Key: typ + "|",
			ExceptionType: typ, Count: 3, SampleMessage: "bad <b>order</b>"}, EpisodeStart: start}
	}
	eps := []history.ErrorGroupEpisode{
		ep("kafka/main/orders.DLT", "com.acme.Poison", now.Add(-2*time.Minute)),
		ep("kafka/eu/west/orders.DLT", "com.acme.Poison", now.Add(-time.Minute)), // a cluster name with "/"
		ep("kafka/gone/orders.DLT", "com.acme.Poison", now),                      // no longer configured
		ep("kafka/main/orders.DLT", "", now),
	}
	ps := NewErrorGroupProblems([]string{"main", "eu/west"}, eps, nil, now)
	if len(ps) != 3 {
		t.Fatalf("%d problems, want 3: %+v", len(ps), ps)
	}
	p := ps[0]
	if p.Kind != KindNewErrorGroup || p.Labels["cluster"] != "main" || p.Labels["topic"] != "orders.DLT" ||
		links.To(p.Page, p.Labels) != "/kafka/main/topics/orders.DLT/errors" || p.Title != "New error in orders.DLT (main): com.acme.Poison, 3 records, the first 2 min ago" {
		t.Errorf("problem: %+v", p)
	}
	// The episode is in the key: the same group back after a quiet window is another problem.
	again := NewErrorGroupProblems([]string{"main"}, []history.ErrorGroupEpisode{ep("kafka/main/orders.DLT", "com.acme.Poison", now)}, nil, now)
	if again[0].Key == p.Key {
		t.Errorf("a new episode kept the key %s", p.Key)
	}
	if ps[1].Labels["cluster"] != "eu/west" || !strings.Contains(ps[2].Title, "records without exception headers") {
		t.Errorf("problems: %+v", ps[1:])
	}
	if got := NewErrorGroupProblems([]string{"main"}, nil, errors.New("down"), now); got != nil {
		t.Errorf("an unreadable store: %+v", got)
	}
}

// Messages that left a dead-letter queue without a Redrive job moving them are a problem of their
// own, not the silent end of "holds N": while the count lasts (queues.LostWindow after the last
// loss), whether or not the queue still holds anything, with a key that stays as the count grows.
func TestDeadLettersLost(t *testing.T) {
	var q queues.Queue
	q.Name, q.Vhost, q.IsDeadLetterQueue = "qa.dlq", "/", true
	q.Lost, q.LostSince, q.LostAt = 40, now.Add(-2*time.Hour).Add(2*time.Minute), now.Add(-2*time.Hour).Add(17*time.Second+2*time.Minute)
	got := RabbitProblems("rmq", queues.Snapshot{Queues: []queues.Queue{q}}, nil, now)
	if len(got) != 1 {
		t.Fatalf("an empty DLQ that lost 40: %+v", got)
	}
	p := got[0]
	if p.Kind != KindDeadLettersLost || p.Severity != Warning || p.Key != "dead_letters_lost/rabbitmq/rmq///qa.dlq" ||
		p.Title != "qa.dlq lost 40 dead letters since 10:02 UTC that Redrive did not move (dropped by the broker at a delivery limit, purged, expired or consumed elsewhere)" ||
		!p.Since.Equal(q.LostSince) || links.To(p.Page, p.Labels) != "/rabbitmq/rmq/queues/%2F/qa.dlq" || p.Labels["queue"] != "qa.dlq" {
		t.Errorf("problem: %+v", p)
	}
	if !strings.Contains(p.Summary, "10:02 UTC") || !strings.Contains(p.Summary, "24 h after the last loss") {
		t.Errorf("summary: %s", p.Summary)
	}

	one := q
	one.Lost, one.Ready = 1, 3
	got = RabbitProblems("rmq", queues.Snapshot{Queues: []queues.Queue{one}}, nil, now)
	if len(got) != 2 || got[0].Key != p.Key || !strings.HasPrefix(got[0].Title, "qa.dlq lost 1 dead letter since") || got[1].Kind != KindDeadLetters {
		t.Errorf("a DLQ that holds 3 and lost 1: %+v", got)
	}

	old := q
	old.LostAt = now.Add(-queues.LostWindow)
	if got := RabbitProblems("rmq", queues.Snapshot{Queues: []queues.Queue{old}}, nil, now); len(got) != 0 {
		t.Errorf("a loss %s old: %+v", queues.LostWindow, got)
	}
	long := q
	long.LostSince = now.Add(-30 * time.Hour)
	if got := RabbitProblems("rmq", queues.Snapshot{Queues: []queues.Queue{long}}, nil, now); len(got) != 1 || !strings.Contains(got[0].Title, "since Feb 28 06:00 UTC") {
		t.Errorf("an episode started yesterday names its date: %+v", got)
	}
}

// A transaction open on a partition past hanging_transaction_after is a problem naming the topic,
// partition, producer, transactional id, how long it has been open and the groups it holds back;
// one younger than the threshold is not; a hanging one (no coordinator lists the partition) is
// critical and says how an admin aborts it.
func TestTransactionProblems(t *testing.T) {
	consumer := func(name string, committed int64) lag.Group {
		g := group(name, lag.StatusOK, 0)
		g.Topics = []kafka.TopicLag{{Topic: "orders", Partitions: []kafka.PartitionLag{{Partition: 1, Committed: committed, End: 9}}}}
		return g
	}
	open := kafka.OpenTransaction{Topic: "orders", Partition: 1, ProducerID: 4001, TransactionalID: "stuck-tx", State: "Ongoing",
		StartOffset: 5, End: 9, Since: now.Add(-7 * time.Minute), SinceKnown: true, Timeout: 15 * time.Minute, After: 5 * time.Minute}
	young := open
	young.Partition, young.Since = 2, now.Add(-4*time.Minute)
	hanging := open
	hanging.Topic, hanging.TransactionalID, hanging.Hanging, hanging.SinceKnown = "payments", "", true, false
	snap := lag.Snapshot{Cluster: "main", Groups: []lag.Group{consumer("billing", 5), consumer("audit", 3), consumer("shipping", 9)},
		Transactions: []kafka.OpenTransaction{open, young, hanging}}
	got := KafkaProblems("main", snap, nil, now)
	if len(got) != 2 {
		t.Fatalf("got %d problems, want 2 (the young transaction is not one): %+v", len(got), got)
	}
	p := got[0]
	if p.Kind != KindKafkaTransaction || p.Severity != Warning || p.Key != "kafka_transaction/main/orders/1/4001/5" ||
		p.Title != "orders partition 1 (main): a transaction of transactional id stuck-tx (producer 4001) has been open 7 min, holding back 4 offsets from offset 5; billing, shipping wait there" ||
		p.Labels["transactional_id"] != "stuck-tx" || p.Labels["producer_id"] != "4001" || p.Labels["partition"] != "1" ||
		p.Labels["groups"] != "billing,shipping" || !p.Since.Equal(open.Since) || !strings.Contains(p.Summary, "aborts it when its timeout (15 min) passes") {
		t.Errorf("open transaction problem %+v", p)
	}
	h := got[1]
	if h.Severity != Critical || !strings.Contains(h.Title, "producer 4001 (no transactional id known) has been open at least 7 min") ||
		!strings.Contains(h.Summary, "kafka-transactions.sh --bootstrap-server <bootstrap> abort --topic payments --partition 1 --start-offset 5") {
		t.Errorf("hanging transaction problem %+v", h)
	}
}
