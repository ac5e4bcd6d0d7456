package rabbit

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/ops"
)

// A name longer than RabbitMQ allows (the management API answers 414) is quoted cut in what a
// person reads: a browse of a 100,000-character queue answered "rabbitmq broker "main" did not
// answer, or refused (browse //aaaa…" with the whole name, 100 KB. The internal error keeps it.
func TestLongNameQuotedCut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	long := strings.Repeat("a", 100_000)
	_, err := e.b.Browse(ctxT(t), e.vhost, long, 10)
	if err == nil {
		t.Fatal("browsed a queue of 100,000 characters")
	}
	if msg := ops.Message(err); len(msg) > 400 || !strings.Contains(msg, "…") {
		t.Fatalf("%d bytes shown: %.300s", len(msg), msg)
	}
	if !strings.Contains(err.Error(), long) {
		t.Fatalf("the internal error lost the name: %.300s", err)
	}
}
