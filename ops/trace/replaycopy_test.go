package trace

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/kafka"
)

// A record of the original topic carrying Redrive's x-redrive-replay-id is the replay copy a job
// published, not the message's first publication (issue 37, item 3: the trace said "published to
// orders/0 at offset 1466" of a copy, before its own dead letter); its step says so, the verdict
// tells it after the dead letter, and the order of the steps is their time.
func TestTraceTellsReplayCopies(t *testing.T) {
	r := &run{t: New(Options{})}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	first := kafka.Record{Topic: "orders", Partition: 0, Offset: 12, Timestamp: at, Key: []byte("o-1")}
	dead := kafka.Record{Topic: "orders.DLT", Partition: 0, Offset: 3, Timestamp: at.Add(time.Minute), Key: []byte("o-1"),
		DeadLetter: &kafka.DeadLetter{OriginalTopic: "orders", ExceptionType: "com.acme.Timeout"}}
	copyRec := kafka.Record{Topic: "orders", Partition: 0, Offset: 1466, Timestamp: at.Add(time.Hour), Key: []byte("o-1"),
		Headers: []kafka.Header{{Key: "x-redrive-replay-id", Value: []byte("job_0123456789abcdef")}, {Key: "x-redrive-replay-count", Value: []byte("1")}}}
	steps := []Step{r.recordStep("main", "original", copyRec), r.recordStep("main", "dead_letter", dead), r.recordStep("main", "original", first)}
	sortSteps(steps)
	if steps[0].Place != "orders/0 @ 12" || steps[2].Place != "orders/0 @ 1466" {
		t.Errorf("order: %s, %s, %s", steps[0].Place, steps[1].Place, steps[2].Place)
	}
	if d := steps[2].Detail; !strings.HasPrefix(d, "replay copy published by Redrive's job job_0123456789abcdef") {
		t.Errorf("the copy's step: %q", d)
	}
	got := verdict(Query{MessageID: "o-1"}, steps, nil)
	if !strings.Contains(got, "published to orders/0 at offset 12,") || strings.Contains(got, "offset 1466,") ||
		!strings.Contains(got, "replayed by Redrive to orders/0 at offset 1466") ||
		strings.Index(got, "dead-lettered") > strings.Index(got, "replayed by Redrive") {
		t.Errorf("verdict %q", got)
	}
	if ReplayCopyOf(first) != "" || ReplayCopyOf(copyRec) != "job_0123456789abcdef" {
		t.Error("ReplayCopyOf")
	}
}
