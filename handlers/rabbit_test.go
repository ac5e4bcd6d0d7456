package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/sampler"
	"github.com/redrive/redrive/ops/storetest"
)

// offlineBroker is a Broker that is never dialled: the tests below fail before any broker call.
func offlineBroker(t testing.TB) *rabbit.Broker {
	t.Helper()
	b, err := rabbit.New(configs.RabbitMQBroker{Name: "main", URL: "amqp://guest:guest@127.0.0.1:1/",
		ManagementURL: "http://127.0.0.1:1"}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRabbitBadInput(t *testing.T) {
	h := NewRabbit([]RabbitBroker{offlineBroker(t)}, nil, nil, nil)
	names := []string{"broker", "vhost", "queue"}
	for _, tc := range []struct {
		query, broker string
		kind          error
		mentions      string
	}{
		{"?limit=0", "main", ops.ErrInvalid, "limit"},
		{"?limit=501", "main", ops.ErrInvalid, "limit"},
		{"?limit=x", "main", ops.ErrInvalid, "limit"},
		{"", "nope", ops.ErrNotFound, "nope"},
	} {
		for _, handler := range []echo.HandlerFunc{h.APIMessages, h.MessagesPage} {
			_, err := callAPI(t, handler, "/x"+tc.query, names, tc.broker, "%2F", "q")
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.mentions) {
				t.Errorf("%s %s: %v, want %v naming %s", tc.broker, tc.query, err, tc.kind, tc.mentions)
			}
		}
	}
}

func TestFindQueue(t *testing.T) {
	snap := queues.Snapshot{Broker: "main", At: time.Now(), Queues: []queues.Queue{
		{Queue: rabbit.Queue{Vhost: "/", Name: "a"}}, {Queue: rabbit.Queue{Vhost: "/", Name: "b"}}, {Queue: rabbit.Queue{Vhost: "v", Name: "a"}}}}
	if q, err := findQueue(snap, "v", "a"); err != nil || q.Vhost != "v" {
		t.Errorf("v/a: %+v %v", q, err)
	}
	if _, err := findQueue(snap, "/", "c"); !errors.Is(err, ops.ErrNotFound) || !strings.Contains(err.Error(), `queue "c"`) {
		t.Errorf("unknown queue: %v", err)
	}
	if _, err := findQueue(snap, "w", "a"); !errors.Is(err, ops.ErrNotFound) || !strings.Contains(err.Error(), `vhost "w"`) {
		t.Errorf("unknown vhost: %v", err)
	}
	if _, err := findQueue(queues.Snapshot{Broker: "main"}, "/", "a"); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("not sampled yet: %v, want ErrUnavailable", err)
	}
}

func TestRabbitMessageJSON(t *testing.T) {
	died := time.Date(2026, 3, 1, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	m := rabbit.Message{Position: 3, Exchange: "orders.dlx", RoutingKey: "order.created", Redelivered: true, MessageID: "evt-1",
		Properties: rabbit.Properties{MessageID: "evt-1", ContentType: "application/json", DeliveryMode: 2},
		Headers:    []rabbit.Header{{Key: "x-card", Value: "4111"}, {Key: "x-death", Value: "[…]"}},
		Body:       []byte(`{"card":{"number":"4111"},"sku":"A"}`), Size: 36,
		DeadLetter: rabbit.DecodeDeadLetter(amqp.Table{
			"x-death": []any{amqp.Table{"queue": "orders.work", "reason": "rejected", "count": int64(2), "time": died,
				"exchange": "orders", "routing-keys": []any{"order.created"}}},
			"x-first-death-queue": "orders.work", "x-first-death-exchange": "orders", "x-first-death-reason": "rejected",
			"x-exception-message": "NPE"})}
	red, err := redact.New([]string{"x-card"}, []string{"$.card.number"})
	if err != nil {
		t.Fatal(err)
	}

	j := toRabbitMessageJSON((*redact.Rules)(nil).Message(m))
	if j.Headers["x-card"] != "4111" || j.BodyEncoding != "json" || j.Body != string(m.Body) || j.BodyRedacted {
		t.Errorf("admin view: %+v", j)
	}
	dl := j.DeadLetter
	if dl == nil || dl.Reason != "rejected" || dl.Count != 2 || dl.OriginalQueue != "orders.work" || dl.OriginalExchange != "orders" ||
		strings.Join(dl.OriginalRoutingKeys, ",") != "order.created" || dl.ExceptionMessage != "NPE" ||
		dl.FirstDeathAt == nil || dl.FirstDeathAt.Location() != time.UTC || !dl.FirstDeathAt.Equal(died) {
		t.Errorf("dead letter: %+v", dl)
	}

	j = toRabbitMessageJSON(red.Message(m))
	if j.Headers["x-card"] != redact.Redacted || j.Headers["x-death"] != "[…]" || strings.Contains(j.Body, "4111") ||
		!strings.Contains(j.Body, `"sku":"A"`) || !j.BodyRedacted {
		t.Errorf("viewer: headers %v body %s", j.Headers, j.Body)
	}
	m.Truncated = true
	if j := toRabbitMessageJSON(red.Message(m)); j.Body != redact.Redacted {
		t.Errorf("a cut body cannot be parsed, so it is hidden whole: %q", j.Body)
	}
	if j.Headers == nil || m.Headers[0].Value != "4111" {
		t.Error("redaction must not change the browsed message")
	}

	for body, enc := range map[string]string{"": "empty", "plain": "text", "\xff\x00": "base64", `[1,2]`: "json"} {
		if _, got := bodyJSON([]byte(body)); got != enc {
			t.Errorf("bodyJSON(%q) encoding %s, want %s", body, got, enc)
		}
	}
	// The wire shape the API promises.
	raw, _ := json.Marshal(toRabbitMessageJSON((*redact.Rules)(nil).Message(rabbit.Message{})))
	for _, k := range []string{`"position"`, `"message_id"`, `"exchange"`, `"routing_key"`, `"redelivered"`, `"properties"`,
		`"headers":{}`, `"body"`, `"body_encoding"`, `"dead_letter":null`} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("message JSON lacks %s: %s", k, raw)
		}
	}
}

func TestMessageFilter(t *testing.T) {
	msg := func(reason, exc string) rabbit.Message {
		return rabbit.Message{DeadLetter: &rabbit.DeadLetter{Reason: reason, ExceptionMessage: exc}}
	}
	for _, tc := range []struct {
		reason, exception, group string
		m                        rabbit.Message
		keep                     bool
	}{
		{"", "", "", rabbit.Message{}, true},
		{"rejected", "", "", msg("rejected", "x"), true},
		{"rejected", "", "", msg("expired", ""), false},
		{"", "Timeout", "", msg("rejected", "ProviderTimeoutException: …"), true},
		{"", "Timeout", "", rabbit.Message{}, false},
		{"expired", "Timeout", "", msg("rejected", "Timeout"), false},
		// group is a plan's exception_type: the key or the class's simple name, never a substring.
		{"", "", "com.acme.StockException", msg("rejected", "com.acme.StockException: out of stock for o-17"), true},
		{"", "", "StockException", msg("rejected", "com.acme.StockException: out of stock for o-18"), true},
		{"", "", "Stock", msg("rejected", "com.acme.StockException: out of stock for o-18"), false},
		{"", "", "read timed out", msg("rejected", "read timed out"), true},
		{"", "", "timed out", msg("rejected", "read timed out"), false},
		{"", "", "StockException", rabbit.Message{}, false},
	} {
		if got := messageFilter(tc.reason, tc.exception, tc.group)(tc.m); got != tc.keep {
			t.Errorf("filter(%q, %q, %q) on %+v = %v", tc.reason, tc.exception, tc.group, tc.m.DeadLetter, got)
		}
	}
}

// Reproduce with the services of `make test` (or `go run ./cmd/devstack up` and its exports):
//
//	go test ./handlers/ -run '^$' -bench RabbitQueues -benchtime 50x
//
// GET /api/v1/rabbitmq/{broker}/queues for a broker with 2,000 queues, through the handler (JSON
// encoding included): "hit" is a replica's in-memory snapshot, "miss" reads and decodes the stored
// snapshot (a replica's first read of each new sample), and "fresh" is the naive alternative of
// asking the management API on every request.
func BenchmarkRabbitQueues(b *testing.B) {
	const queues = 2000
	ctx := context.Background()
	vhost, amqpURL, _ := rabbittest.NewVhost(b)
	_, ch := rabbittest.Channel(b, amqpURL)
	for i := range queues {
		args := amqp.Table{}
		if i%10 == 0 {
			args["x-dead-letter-exchange"] = "dlx"
		}
		if _, err := ch.QueueDeclare(fmt.Sprintf("bench-%04d", i), false, false, false, false, args); err != nil {
			b.Fatal(err)
		}
	}
	br, err := rabbit.New(rabbittest.Config(b, vhost), configs.MessageIDRules{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(br.Close)
	st := storetest.Open(b)
	newSampler := func(ttl time.Duration) *sampler.Sampler {
		s, err := sampler.New(sampler.Options{Store: st, Rabbit: []sampler.RabbitSource{{Broker: br}}, CacheTTL: ttl})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(s.Close)
		return s
	}
	if err := newSampler(0).SampleOnce(ctx); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, h *Rabbit) {
		for b.Loop() {
			rec, err := callAPI(b, h.APIQueues, "/api/v1/rabbitmq/test/queues", []string{"broker"}, "test")
			if err != nil || rec.Code != http.StatusOK || rec.Body.Len() < queues*100 {
				b.Fatalf("%d %v (%d bytes)", rec.Code, err, rec.Body.Len())
			}
		}
	}
	b.Run("hit", func(b *testing.B) { run(b, NewRabbit([]RabbitBroker{br}, newSampler(time.Hour), nil, nil)) })
	b.Run("miss", func(b *testing.B) { run(b, NewRabbit([]RabbitBroker{br}, newSampler(-1), nil, nil)) })
	b.Run("fresh", func(b *testing.B) {
		h := NewRabbit([]RabbitBroker{br}, freshQueues{br}, nil, nil)
		run(b, h)
	})
}

// freshQueues is the naive alternative: a management API list on every request.
type freshQueues struct{ b *rabbit.Broker }

func (f freshQueues) LatestRabbit(ctx context.Context, broker string) (queues.Snapshot, error) {
	qs, err := f.b.Queues(ctx)
	if err != nil {
		return queues.Snapshot{}, err
	}
	snap := queues.Snapshot{Broker: broker, At: time.Now(), Queues: make([]queues.Queue, len(qs))}
	for i, q := range qs {
		snap.Queues[i] = queues.Queue{Queue: q}
	}
	return snap, nil
}

func (f freshQueues) RabbitQueueHistory(context.Context, string, string, string, time.Time, int) ([]history.RabbitQueuePoint, error) {
	return nil, nil
}
