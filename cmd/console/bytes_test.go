package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// TestHostileBytesReachPeopleInert: names and messages anyone can write — a Kafka exception type
// with "<!channel>", an ESC sequence and a right-to-left override, a queue named
// `evil"; filename=x.exe` — reached the Slack channel's fallback text as a ping and a link, the
// webhook, Slack and email notifications and CSV exports as raw control and bidi characters, and
// the export's Content-Disposition as the queue chose. Now every notification channel and the CSV
// export write them as text (\x1b, \u202e), Slack's fallback text is escaped as its blocks, and the
// export's file name is built from a safe alphabet.
func TestHostileBytesReachPeopleInert(t *testing.T) {
	k := startKafka(t, map[string]int32{"orders": 1, "orders.DLT": 1})
	ctx := waittest.Context(t, 2*time.Minute)
	const hostileType = "<!channel> <https://evil.example|open> com.acme.\u202eEvil\x1b[31mException"
	mustDo(t, kfaketest.Client(t, k.Cluster()).ProduceSync(ctx, &kgo.Record{Topic: "orders.DLT", Key: []byte("k\x1b[31m\u202e\x07"),
		Value: []byte(`{"n":1}`), Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte(hostileType)},
			{Key: "kafka_dlt-exception-message", Value: []byte("bell\x07 \u2066isolated\u2069")}}}).FirstErr())

	const queue = `evil"; filename=x.exe`
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	_, err := ch.QueueDeclare(queue, true, false, false, false, nil)
	mustDo(t, err)
	mustDo(t, ch.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{MessageId: "m-\u202e1",
		Body: []byte("\x1b]0;pwned\x07 \u202egpj.exe"), Headers: amqp.Table{"note": "\x00nul"}}))
	rabbittest.WaitDepth(t, ch, queue, 1, 20*time.Second)

	hook, hookBodies := webhookReceiver(t)
	slackURL, slackBodies := webhookReceiver(t)
	mail := newPlainMailbox(t)
	cfg := rabbittest.Config(t, vhost)
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
sampler: {interval: 1s}
kafka: [{name: main, brokers: [%q]}]
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
notify:
  interval: 1s
  channels:
    - {name: hook, type: webhook, url: %q}
    - {name: chat, type: slack, url: %q}
    - {name: mail, type: email, smtp: {host: 127.0.0.1, port: %d, from: redrive@example.com, to: [oncall@example.com], starttls: false}}
  rules: [{match: {kind: new_error_group}, channels: [hook, chat, mail]}]
`, pgtest.NewDatabase(t), k.Addrs()[0], string(cfg.URL), cfg.ManagementURL, vhost, hook, slackURL, mail.port))

	waittest.Until(t, 60*time.Second, "the new_error_group notification on every channel", func() bool {
		return len(hookBodies()) > 0 && len(slackBodies()) > 0 && len(mail.messages()) > 0
	})
	raw := []string{"\x1b", "\x07", "\x00", "\u202e", "\u2066", "\u2069"}
	for channel, bodies := range map[string][]string{"webhook": hookBodies(), "slack": slackBodies(), "email": mail.messages()} {
		for _, b := range bodies {
			if channel != "email" { // JSON: what a receiver decodes
				var v any
				mustDo(t, json.Unmarshal([]byte(b), &v))
				b = decodedStrings(v)
			}
			for _, r := range raw {
				if strings.Contains(b, r) {
					t.Errorf("the %s notification carries %q raw: %q", channel, r, b)
				}
			}
			if !strings.Contains(b, `com.acme.\u202eEvil\x1b[31mException`) {
				t.Errorf("the %s notification does not name the exception in words: %q", channel, b)
			}
		}
	}
	for _, b := range slackBodies() {
		var msg struct{ Text string }
		mustDo(t, json.Unmarshal([]byte(b), &msg))
		if strings.Contains(msg.Text, "<!channel>") || strings.Contains(msg.Text, "<https://") || !strings.Contains(msg.Text, "&lt;!channel&gt;") {
			t.Errorf("Slack's fallback text: %q", msg.Text)
		}
	}

	for _, p := range []string{paths.APIKafkaExport("main", "orders.DLT"), paths.APIQueueExport("main", vhost, queue)} {
		r := do(t, nil, "GET", base+p+"?format=csv", "", "")
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
		for _, c := range raw {
			if strings.Contains(r.body, c) {
				t.Errorf("%s carries %q raw", p, c)
			}
		}
		if !strings.Contains(r.body, `\x1b`) || !strings.Contains(r.body, `\u202e`) {
			t.Errorf("%s does not write the controls as text: %q", p, r.body)
		}
	}
	r := do(t, nil, "GET", base+paths.APIQueueExport("main", vhost, queue)+"?format=csv", "", "")
	if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename="evil___filename_x.exe.csv"` {
		t.Errorf("Content-Disposition %q", cd)
	}
}

// decodedStrings is every string of a decoded JSON value, one after another: what a receiver reads.
func decodedStrings(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x + "\n")
		case map[string]any:
			for k, e := range x {
				b.WriteString(k + "\n")
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}
