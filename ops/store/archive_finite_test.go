package store_test

import (
	"context"
	"math"
	"testing"

	"github.com/redrive/redrive/ops/replay"
)

// A message whose headers hold a float JSON cannot (NaN, ±Inf: an AMQP table may) is archived,
// those values as their text: the archive refused the whole message, so on RabbitMQ 4 a quorum
// queue's message near its delivery limit failed custody on every read and went back one delivery
// nearer to being dropped. The wire form keeps the values for a restore.
func TestArchiveHoldsHeadersJSONCannot(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	wire := []byte{1, 2, 3}
	m := replay.Archived{JobID: "custody", Locator: "custody/nan", Broker: "main", Vhost: "/", Queue: "orders.dlq", Actor: "t",
		Properties: map[string]any{}, Headers: map[string]any{"score": math.NaN(), "deep": map[string]any{"up": math.Inf(1)},
			"list": []any{float32(math.Inf(-1)), 1.5}}, HeadersWire: wire, Body: []byte("x")}
	if err := st.ArchiveMessages(ctx, []replay.Archived{m}); err != nil {
		t.Fatalf("archive: %v", err)
	}
	got, err := st.ArchivedMessages(ctx, replay.ArchiveFilter{Queue: "orders.dlq"})
	if err != nil || len(got) != 1 {
		t.Fatalf("archived %d, %v", len(got), err)
	}
	h := got[0].Headers
	deep, _ := h["deep"].(map[string]any)
	list, _ := h["list"].([]any)
	if h["score"] != "NaN" || deep["up"] != "+Inf" || len(list) != 2 || list[0] != "-Inf" || list[1] != 1.5 || string(got[0].HeadersWire) != string(wire) {
		t.Fatalf("headers read back %v (wire %v)", h, got[0].HeadersWire)
	}
}
