package rabbit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/rabbittest"
)

// Reproduce with (RabbitMQ from `go run ./cmd/devstack up`, or under `make bench`):
//
//	go test ./ops/rabbit/ -run '^$' -bench . -benchtime=5x
//
// Both run against the real RabbitMQ on loopback. Each has the naive alternative beside it and
// logs the ratio.

const (
	benchQueues = 2000
	browseCount = 500
)

// BenchmarkQueues lists 2,000 queues. "columns" is Queues: one GET /api/queues/{vhost} asking only
// for the columns it uses; "full" is rabbit-hole's ListQueuesIn, which takes every field the API
// sends (garbage collection, backing queue status, …) and decodes them into rabbit-hole's structs.
func BenchmarkQueues(b *testing.B) {
	e := newEnv(b)
	start := time.Now()
	declareMany(b, e.url, benchQueues, 8)
	b.Logf("setup: declared %d queues in %v", benchQueues, time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	// Management statistics for new queues appear within one collection interval.
	rabbittest.WaitFor(b, 30*time.Second, "queues in the management API", func(ctx context.Context) bool {
		qs, err := e.b.Queues(ctx)
		return err == nil && len(qs) == benchQueues
	})

	var ours, naive time.Duration
	b.Run("columns", func(b *testing.B) {
		for b.Loop() {
			qs, err := e.b.Queues(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if len(qs) != benchQueues {
				b.Fatalf("%d queues", len(qs))
			}
		}
		ours = b.Elapsed() / time.Duration(b.N)
	})
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			qs, err := e.b.rh.ListQueuesIn(e.vhost)
			if err != nil {
				b.Fatal(err)
			}
			if len(qs) != benchQueues {
				b.Fatalf("%d queues", len(qs))
			}
		}
		naive = b.Elapsed() / time.Duration(b.N)
	})
	if ours > 0 {
		b.Logf("Queues %v/op, rabbit-hole full list %v/op: full/columns = %.1fx", ours, naive, float64(naive)/float64(ours))
	}
}

// declareMany declares n queues (every tenth with dead-letter arguments) over `workers`
// concurrent channels, which is what makes setting up thousands of queues quick.
func declareMany(b *testing.B, amqpURL string, n, workers int) {
	b.Helper()
	conn, _ := rabbittest.Channel(b, amqpURL)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ch, err := conn.Channel()
			if err != nil {
				errs <- err
				return
			}
			defer ch.Close()
			for i := w; i < n; i += workers {
				var args amqp.Table
				if i%10 == 0 {
					args = amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": fmt.Sprintf("q%04d.dlq", i)}
				}
				if _, err := ch.QueueDeclare(fmt.Sprintf("q%04d", i), true, false, false, false, args); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkBrowse500 reads 500 messages of a queue and leaves them there. "amqp" is Browse (a
// consumer with prefetch 500, one cancel and one multiple nack); "management" is the management
// API's POST /api/queues/{vhost}/{name}/get with ackmode ack_requeue_true and count 500.
func BenchmarkBrowse500(b *testing.B) {
	e := newEnv(b)
	e.Queue("dlq", nil)
	body := bytes.Repeat([]byte("x"), 200)
	for i := 0; i < browseCount; i++ {
		e.publish("", "dlq", amqp.Publishing{Body: body, MessageId: fmt.Sprintf("m-%d", i),
			Headers: amqp.Table{"x-death": []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "work",
				"exchange": "shop", "routing-keys": []any{"order.created"}, "time": time.Now()}}}})
	}
	ctx := context.Background()

	var ours, naive time.Duration
	b.Run("amqp", func(b *testing.B) {
		for b.Loop() {
			res, err := e.b.Browse(ctx, e.vhost, "dlq", browseCount)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Messages) != browseCount {
				b.Fatalf("%d messages", len(res.Messages))
			}
		}
		ours = b.Elapsed() / time.Duration(b.N)
	})

	amqpURL, mgmtURL := rabbittest.Env(b)
	u, _ := amqp.ParseURI(amqpURL)
	getURL := mgmtURL + "/api/queues/" + url.PathEscape(e.vhost) + "/dlq/get"
	req := []byte(`{"count":500,"ackmode":"ack_requeue_true","encoding":"auto","truncate":262144}`)
	hc := &http.Client{Timeout: time.Minute}
	b.Run("management", func(b *testing.B) {
		for b.Loop() {
			r, err := http.NewRequestWithContext(ctx, http.MethodPost, getURL, bytes.NewReader(req))
			if err != nil {
				b.Fatal(err)
			}
			r.SetBasicAuth(u.Username, u.Password)
			r.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(r)
			if err != nil {
				b.Fatal(err)
			}
			var msgs []json.RawMessage
			err = json.NewDecoder(resp.Body).Decode(&msgs)
			resp.Body.Close()
			if err != nil || len(msgs) != browseCount {
				b.Fatalf("%d messages, %v (HTTP %d)", len(msgs), err, resp.StatusCode)
			}
		}
		naive = b.Elapsed() / time.Duration(b.N)
	})
	if ours > 0 {
		b.Logf("Browse %v/op, management get %v/op: management/amqp = %.1fx", ours, naive, float64(naive)/float64(ours))
	}
	if d := e.depth("dlq"); d != browseCount {
		b.Fatalf("after the benchmark the queue holds %d messages, want %d", d, browseCount)
	}
}
