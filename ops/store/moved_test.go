package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
)

// What Redrive took out of a broker's queues: its RabbitMQ jobs' published counts (replays and
// discards, vhost "" read as "/"), and the messages archived without a job (a read's custody);
// not a discard job's archive rows a second time, not restores, not another broker's or Kafka's.
func TestRabbitMoved(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	job := func(id, source string, published int) {
		t.Helper()
		w, err := st.BeginPlan(ctx, "p-"+id)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(ctx, replay.StoredPlan{ID: "p-" + id, Actor: "t", Source: []byte(source), Total: published}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateJob(ctx, replay.Job{ID: id, PlanID: "p-" + id, Actor: "t", RatePerSecond: 1, Total: published}); err != nil {
			t.Fatal(err)
		}
		pgtest.Exec(t, dsn, `UPDATE redrive.replay_job SET published = $2, skipped = 3, status = 'done' WHERE id = $1`, id, published)
	}
	job("r1", `{"kind":"rabbitmq","broker":"main","vhost":"/","queue":"a.dlq"}`, 10)
	job("r2", `{"kind":"rabbitmq","broker":"main","queue":"a.dlq","limit":5}`, 5)
	job("d1", `{"kind":"rabbitmq","action":"discard","broker":"main","vhost":"v","queue":"b.dlq"}`, 2)
	job("x1", `{"kind":"rabbitmq","broker":"other","vhost":"/","queue":"a.dlq"}`, 7)
	job("k1", `{"kind":"kafka","cluster":"main","topic":"a.dlq"}`, 9)
	job("a1", `{"kind":"archive","archive_id":1,"broker":"main","vhost":"v","queue":"b.dlq"}`, 1)
	archived := func(jobID, vhost, queue string, n int) (rows []replay.Archived) {
		for i := range n {
			rows = append(rows, replay.Archived{JobID: jobID, Locator: fmt.Sprintf("%s-%s-%d", jobID, queue, i), Broker: "main", Vhost: vhost,
				Queue: queue, Actor: "t", Properties: map[string]any{}, Headers: map[string]any{}, HeadersWire: []byte{}, Body: []byte("x")})
		}
		return rows
	}
	for _, rows := range [][]replay.Archived{archived("d1", "v", "b.dlq", 2), archived("custody", "v", "b.dlq", 4), archived("custody", "/", "c.dlq", 1)} {
		if err := st.ArchiveMessages(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.RabbitMoved(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	want := map[history.RabbitMoved]bool{{Vhost: "/", Queue: "a.dlq", Messages: 15}: true, {Vhost: "v", Queue: "b.dlq", Messages: 6}: true,
		{Vhost: "/", Queue: "c.dlq", Messages: 1}: true}
	have := map[history.RabbitMoved]bool{}
	for _, m := range got {
		have[m] = true
	}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("moved = %v, want %v", got, want)
	}
}
