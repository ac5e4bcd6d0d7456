package replay_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/replay"
)

// A to_offset of 2^63-1 means "to the end" (to+1 overflowed: "no messages"); an empty source
// name is 400 "required", not 404 for the cluster "".
func TestKafkaPlanBounds(t *testing.T) {
	w := newWorld(t)
	w.deadLetter(t, 0, "m-1", "k-1", "com.acme.StockException")
	w.deadLetter(t, 0, "m-2", "k-2", "com.acme.StockException")
	e := w.engine(t, "a")
	plan, err := e.Plan(ctxT(t), "alice", kafkaSource(0, 0, math.MaxInt64), replay.Filter{})
	if err != nil || plan.Total != 2 {
		t.Fatalf("to_offset MaxInt64: %v, %d items; want 2", err, plan.Total)
	}
	for _, src := range []replay.Source{
		{Kind: "kafka", Topic: "orders.DLT"},
		{Kind: "rabbitmq", Queue: "q"},
		{Kind: "outbox", IDs: []int64{1}},
	} {
		_, err := e.Plan(ctxT(t), "alice", src, replay.Filter{})
		var fe *ops.FieldError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "source.") || fe.Problem != "required" {
			t.Errorf("%s without a name: %v; want source.…: required", src.Kind, err)
		}
	}
}
