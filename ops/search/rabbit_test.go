package search

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
)

// TestScanRabbitStopsReading: a filter search of a classic queue of 40,000 messages with limit 1,
// or out of time, stops reading the queue there and answers with what it found — it does not read
// (and return) the rest of max_scan first. The queue holds every message in order afterwards, and
// only the few the searches read come back redelivered. The old scan read all 40,000 each time
// (a limit=1 search of a 100,000-message queue ran past the request's timeout).
func TestScanRabbitStopsReading(t *testing.T) {
	t.Parallel()
	vhost, url, _ := rabbittest.NewVhost(t)
	b, err := rabbit.New(rabbittest.Config(t, vhost), configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	const n = 40_000
	id := func(i int) string { return fmt.Sprintf("m-%05d", i) }
	rabbittest.Fill(t, url, "big.dlq", n, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: id(i), ContentType: "application/json", DeliveryMode: amqp.Persistent,
			Body: fmt.Appendf(nil, `{"n":%d}`, i)}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, tc := range []struct {
		name, filter string
		limit        int
		timeout      time.Duration
		stopped      string
		matches      []string // message ids
	}{
		{name: "Limit", filter: `body.n >= 5`, limit: 1, timeout: 10 * time.Second, stopped: StoppedLimit, matches: []string{id(5)}},
		// The time is looked at after every message: the first look finds it over.
		{name: "Timeout", filter: `body.n % 100 == 0`, timeout: time.Nanosecond, stopped: StoppedTimeout,
			matches: []string{id(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(RabbitMQ, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := ScanRabbit(ctx, b, RabbitQuery{Vhost: vhost, Queue: "big.dlq", Filter: f, Limit: tc.limit,
				MaxScan: rabbit.MaxPeek, Timeout: tc.timeout})
			t.Logf("%s: scanned %d of %d in %v", tc.filter, res.Scanned, n, time.Since(start))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range res.Matches {
				got = append(got, m.MessageID)
			}
			if res.Stopped != tc.stopped || fmt.Sprint(got) != fmt.Sprint(tc.matches) {
				t.Fatalf("stopped %q with %v, want %q with %v", res.Stopped, got, tc.stopped, tc.matches)
			}
			if res.Browse.Ready != n || res.Exhausted {
				t.Errorf("ready %d, exhausted %v", res.Browse.Ready, res.Exhausted)
			}
		})
	}
	if r := rabbittest.ReadBack(t, url, vhost, "big.dlq", n, id); r > 4_000 {
		t.Errorf("%d of %d messages came back redelivered: the searches read on after they stopped", r, n)
	}
}
