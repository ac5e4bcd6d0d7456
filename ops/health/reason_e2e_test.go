package health_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/notify"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/ops/waittest"
)

// leaked are the pieces of driver text the outside report found in the overview, the notification
// log and webhook bodies: the DSN's user, password and database, the address, the dial, the
// server's words about the missing table.
var leaked = []string{"user=", "database=", "qacuser", "SECRET", "qacdb", "127.0.0.1", ":3/", "port 3", "dial",
	"relation", "qac_missing_table", "does not exist", "ERROR:", "pgconn", "*net.", "connection refused",
	"context deadline exceeded", "kgo", "franz"}

func assertNoLeak(t *testing.T, what, text string) {
	t.Helper()
	for _, l := range leaked {
		if strings.Contains(text, l) {
			t.Errorf("%s carries %q: %s", what, l, text)
		}
	}
}

// The outside report's setup, with the real adapters: an outbox whose database does not answer
// (x-down), one whose table is missing on the shared PostgreSQL (x-missing), a Kafka cluster and a
// RabbitMQ broker nobody listens for, and a notification rule for outbox_unavailable to a
// webhook. What the overview and the webhook read names each outbox and what to do, and none of
// the drivers' text.
func TestRealFailuresReachPeopleAsTheirMessages(t *testing.T) {
	missing := pgtest.NewDatabase(t)
	cfg, err := configs.Parse([]byte(`
auth: {mode: none}
store: {dsn: "`+missing+`"}
outboxes:
  - {name: x-down, dsn: "postgres://qacuser:SECRET@127.0.0.1:3/qacdb?sslmode=disable&connect_timeout=2"}
  - {name: x-missing, dsn: "`+missing+`", table: qac_missing_table}
kafka: [{name: gone, brokers: ["127.0.0.1:3"], request_timeout: 1s}]
rabbitmq: [{name: gone, url: "amqp://qacuser:SECRET@127.0.0.1:3/", management_url: "http://127.0.0.1:3"}]
`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var outboxes []health.Outbox
	var checks []health.Check
	for _, oc := range cfg.Outboxes {
		o, err := pgoutbox.Open(context.Background(), oc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(o.Close)
		outboxes = append(outboxes, o)
		checks = append(checks, health.Check{Name: "outbox/" + o.Name(), Ping: o.Ping})
	}
	k, err := kafka.New(cfg.Kafka[0], cfg.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	r, err := rabbit.New(cfg.RabbitMQ[0], cfg.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	checks = append(checks, health.Check{Name: "kafka/gone", Ping: k.Ping}, health.Check{Name: "rabbitmq/gone", Ping: r.Ping})
	m := health.NewMonitor(health.Sources{Outboxes: outboxes, Checks: checks, Log: slog.New(slog.DiscardHandler)})

	rep := m.Evaluate(context.Background())
	titles := map[string]string{}
	for _, p := range rep.Problems {
		titles[p.Key] = p.Title
		b, _ := json.Marshal(p)
		assertNoLeak(t, "problem "+p.Key, string(b))
	}
	want := map[string]string{
		"outbox_unavailable/x-down": `Outbox x-down cannot be read: the database of outbox "x-down" did not answer (stats); try again, or see whether it is up`,
		"dependency_down/outbox/x-down": `outbox/x-down is unreachable: the database of outbox "x-down" did not answer (ping); ` +
			`try again, or see whether it is up`,
		"outbox_unavailable/x-missing": `Outbox x-missing cannot be read: outbox "x-missing": stats: its database refused the query ` +
			`(SQLSTATE 42P01); check the outbox's table and the role's rights (console doctor)`,
	}
	for k, w := range want {
		if titles[k] != w {
			t.Errorf("%s: title %q, want %q", k, titles[k], w)
		}
	}
	for _, k := range []string{"dependency_down/outbox/x-missing", "dependency_down/kafka/gone", "dependency_down/rabbitmq/gone"} {
		if titles[k] == "" {
			t.Errorf("no problem %s: %v", k, titles)
		}
	}
	if !strings.Contains(titles["dependency_down/kafka/gone"], `kafka cluster "gone"`) ||
		!strings.Contains(titles["dependency_down/rabbitmq/gone"], `rabbitmq broker "gone"`) {
		t.Errorf("the broker rows do not say which: %v", titles)
	}
	for _, d := range rep.Dependencies {
		if d.OK {
			t.Errorf("%s answered", d.Name)
		}
		assertNoLeak(t, "dependency row "+d.Name, d.Error)
		if !strings.Contains(d.Error, strings.SplitN(d.Name, "/", 2)[1]) {
			t.Errorf("dependency row %s does not name it: %q", d.Name, d.Error)
		}
	}

	// The webhook body of the notification rule {kind: outbox_unavailable}.
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	n, err := notify.New(notify.Options{Store: storetest.Open(t), Problems: m, Owner: "r1", Tick: 20 * time.Millisecond,
		Config: notify.Settings{Interval: time.Millisecond, MaxAttempts: 3,
			Channels: []notify.ChannelSettings{{Name: "hook", Type: "webhook", URL: srv.URL, SignatureHeader: "X-Redrive-Signature"}},
			Rules:    []notify.Rule{{Match: notify.Match{Kind: health.KindOutboxUnavailable}, Channels: []string{"hook"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Release)
	got := waittest.For(t, 30*time.Second, "both outboxes' webhook bodies", func() ([]string, bool) {
		if _, err := n.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := n.Round(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...), len(bodies) >= 2
	})
	for _, b := range got {
		assertNoLeak(t, "webhook body", b)
		var e notify.Event
		if err := json.Unmarshal([]byte(b), &e); err != nil {
			t.Fatal(err)
		}
		if e.Title != want[e.Key] {
			t.Errorf("webhook %s: title %q, want %q", e.Key, e.Title, want[e.Key])
		}
	}
}
