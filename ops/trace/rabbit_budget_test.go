package trace_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/trace"
)

// TestTraceRabbitWithinBudget: a trace of a message near the head of a DLQ of 100,000 messages,
// whose reading takes longer than the time budget, finds it, says the queue was searched in part
// (the first N of 100,000 messages) — not that the broker is down — and ends within its budget;
// the queues after it are "not searched", all with the same count of queues searched. The old
// trace read on past the budget until the broker call timed out, dropped what it had found and
// called the healthy broker down; its counts of queues searched went up from one queue to the next.
func TestTraceRabbitWithinBudget(t *testing.T) {
	t.Parallel()
	vhost, url, _ := rabbittest.NewVhost(t)
	const n = 100_000
	id := func(i int) string { return fmt.Sprintf("m-%06d", i) }
	body := strings.Repeat("x", 200)
	rabbittest.Fill(t, url, "a.dlq", n, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: id(i), DeliveryMode: amqp.Persistent, Body: []byte(body)}
	})
	later := []string{"b.dlq", "c.dlq", "d.dlq"}
	for _, q := range later {
		rabbittest.Fill(t, url, q, 1, func(int) amqp.Publishing { return amqp.Publishing{MessageId: q + "-1"} })
	}
	b := openBroker(t, vhost, configs.MessageIDRules{}, 30*time.Second, "the DLQs' ready counts in the management API", func(topo rabbit.Topology) bool {
		ready := 0
		for _, q := range topo.Queues {
			if topo.DLQs[q.Ref()] && q.Ready > 0 {
				ready++
			}
		}
		return ready == 4
	})

	const budget = 500 * time.Millisecond
	tr := trace.New(trace.Options{Rabbit: []trace.RabbitBroker{b}, Budget: trace.Budget{Time: budget}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name, id string
		found    bool
	}{
		{"Found", id(7), true},
		{"NotFound", "no-such-id", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res trace.Result
			var took time.Duration
			for attempt := 1; ; attempt++ {
				start := time.Now()
				var err error
				res, err = tr.Trace(ctx, trace.Query{MessageID: tc.id})
				took = time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				var details []string
				for _, s := range res.Steps {
					details = append(details, s.Source+": "+s.Detail)
				}
				t.Logf("attempt %d: %v; verdict: %s\n%s", attempt, took, res.Verdict, strings.Join(details, "\n"))
				// On a loaded machine (the -race suite, every package at once) the broker may hand
				// over fewer than the 8 messages up to position 7 within the budget: then the message
				// was rightly not found, and the trace is asked again, so that the run proves the
				// finding too. A read that reached position 7 and did not find it fails below.
				if read := readOf(res.Verdict, "a.dlq"); !tc.found || read < 0 || read > 7 {
					break // (read < 0: the verdict says no partial read, which the checks below fail)
				}
				if attempt == 5 {
					t.Fatalf("in %d traces the broker never handed over the 8 messages up to position 7 within the budget of %v", attempt, budget)
				}
			}
			if took > budget+2500*time.Millisecond {
				t.Errorf("the trace took %v, past its budget of %v", took, budget)
			}
			var found []trace.Step
			for _, s := range res.Steps {
				if s.Down {
					t.Errorf("step %q: down, but the broker answered", s.Detail)
				}
				if s.Found {
					found = append(found, s)
				}
			}
			if tc.found && (len(found) != 1 || !strings.HasSuffix(found[0].Place, " position 7")) {
				t.Errorf("found %+v, want the message at position 7 of a.dlq", found)
			}
			if !tc.found && len(found) != 0 {
				t.Errorf("found %+v", found)
			}
			if !strings.Contains(res.Verdict, "searched in part — a.dlq: first ") || !strings.Contains(res.Verdict, fmt.Sprintf(" of %d messages read, time budget of %v exceeded", n, budget)) {
				t.Errorf("verdict %q does not say a.dlq was searched in part", res.Verdict)
			}
			for _, q := range later {
				want := fmt.Sprintf("not searched: test: 1 of 4 queues searched, time budget of %v exceeded", budget)
				if s := stepOf(res.Steps, "rabbitmq test/"+q); s == nil || s.Detail != want {
					t.Errorf("%s: step %+v, want %q", q, s, want)
				}
			}
		})
	}
	// The traces read the head only: the rest was never taken, and everything is where it was.
	if r := rabbittest.ReadBack(t, url, vhost, "a.dlq", n, id); r >= n {
		t.Errorf("all %d messages came back redelivered: the traces read the whole queue", r)
	}
}

// readOf is how many messages of queue a verdict says were read ("queue: first N of M messages
// read"), -1 when it does not say.
func readOf(verdict, queue string) int {
	m := regexp.MustCompile(regexp.QuoteMeta(queue) + `: first (\d+) of \d+ messages read`).FindStringSubmatch(verdict)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func stepOf(steps []trace.Step, source string) *trace.Step {
	for i := range steps {
		if steps[i].Source == source {
			return &steps[i]
		}
	}
	return nil
}
