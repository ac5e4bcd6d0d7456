package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// pageWidth opens url in the 1400 px window and returns how wide the document is: wider than
// the window is a page that scrolls sideways, its later columns out of sight.
func pageWidth(t *testing.T, ctx context.Context, u, ready, shot string) int {
	t.Helper()
	act(t, ctx, chromedp.Navigate(u), chromedp.WaitVisible(ready))
	if shot != "" {
		screenshot(t, ctx, shot)
	}
	return must(t, ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
}

// Kafka allows topic names of 249 characters and group names of any length, without a space to
// break at. QA: one such DLT made the cluster page's dead-letter table 2,315 px wide, a 5,000
// character group the groups table 39,632 px, and the group, topic and errors pages 2,750 to
// 4,258 px, hiding every column but the name. Names now break anywhere, a name in a table is at
// most 40em wide, and every page stays within the 1400 px window.
func TestBrowserLongKafkaNamesFitTheWindow(t *testing.T) {
	// No dot or hyphen to break at, as QA's names.
	longDLT := strings.Repeat("ordersdeadletters", 15)[:249-len(".DLT")] + ".DLT"
	longGroup := strings.Repeat("billingconsumer", 200)
	// Dead-letter topics whose newest records are these ages: as text, "25 s ago" sorts between
	// "19 min ago" and "27 min ago".
	ages := map[string]time.Duration{"a.DLT": 25 * time.Second, "b.DLT": 17 * time.Minute, "c.DLT": 19 * time.Minute, "d.DLT": 27 * time.Minute}
	topics := map[string]int32{longDLT: 2, "orders": 1}
	for name := range ages {
		topics[name] = 1
	}
	k := startKafka(t, topics)
	ctx := waittest.Context(t, time.Minute)
	cl := kfaketest.Client(t, k.Cluster(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	now := time.Now()
	var recs []*kgo.Record
	for i := range 12 {
		recs = append(recs, &kgo.Record{Topic: longDLT, Partition: int32(i % 2), Timestamp: now.Add(-time.Duration(12-i) * time.Minute),
			Headers: []kgo.RecordHeader{
				{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
				{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme." + strings.Repeat("Very", 40) + fmt.Sprintf("LongException%d", i%3))},
				{Key: "kafka_dlt-exception-message", Value: []byte("order " + strings.Repeat("x", 300) + " failed")},
				{Key: "messageId", Value: []byte(fmt.Sprintf("evt-%d-%s", i, strings.Repeat("id", 100)))},
			},
			Value: []byte(fmt.Sprintf(`{"order":%d}`, i))})
		recs = append(recs, &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprintf(`{"order":%d}`, i))})
	}
	for name, age := range ages {
		recs = append(recs, &kgo.Record{Topic: name, Timestamp: now.Add(-age), Value: []byte(`{}`)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	kfaketest.Commit(t, adm, longGroup, longDLT, map[int32]int64{0: 2, 1: 1})
	kfaketest.Commit(t, adm, longGroup, "orders", map[int32]int64{0: 3})
	base := startConsole(t, "auth: {mode: none}\n"+sampledKafka(pgtest.NewDatabase(t), k))

	b, _ := newBrowser(t)
	// The first sample of the groups arrives within a second or two.
	act(t, b, chromedp.Navigate(base+paths.KafkaCluster("main")), chromedp.WaitVisible(`[data-testid="dlt-table"]`))
	waittest.For(t, 20*time.Second, "the groups sampled", func() (int, bool) {
		_ = chromedp.Do(b, chromedp.Reload(), chromedp.WaitVisible(`[data-testid="dlt-table"]`))
		n, err := chromedp.Run(b, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="group-row"]').length`))
		return n, err == nil && n > 0
	})
	shots := os.Getenv("REDRIVE_SCREENSHOTS") != ""
	name := func(s string) string {
		if shots {
			return s
		}
		return ""
	}
	for _, p := range []struct{ url, ready, shot string }{
		{base + paths.KafkaCluster("main"), `[data-testid="groups-table"]`, "long-names-cluster"},
		{base + paths.KafkaGroup("main", longGroup), `[data-testid="partitions-table"]`, "long-names-group"},
		{base + paths.KafkaTopic("main", longDLT) + "?partition=all", `[data-testid="records-table"]`, "long-names-topic"},
		{base + paths.KafkaTopicErrors("main", longDLT), `[data-testid="error-groups"]`, "long-names-errors"},
	} {
		if w := pageWidth(t, b, p.url, p.ready, name(p.shot)); w > 1400 {
			u, _ := url.Parse(p.url)
			t.Errorf("%s…: the page is %d px wide in a 1400 px window", u.Path[:min(len(u.Path), 60)], w)
		}
	}

	// QA: the Newest column sorted "17 min ago, 19 min ago, 25 s ago, 27 min ago". It sorts by the
	// instant: oldest first, then newest first.
	act(t, b, chromedp.Navigate(base+paths.KafkaCluster("main")), chromedp.WaitVisible(`[data-testid="dlt-table"]`))
	newest := func() (times, texts []string) {
		t.Helper()
		act(t, b, chromedp.Click(`[data-testid="dlt-table"] thead th:nth-child(6)`))
		times = must(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="dlt-row"] td:nth-child(6) time')].map(e => e.getAttribute('datetime'))`))
		texts = must(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="dlt-row"] td:nth-child(6)')].map(e => e.textContent.trim())`))
		return times, texts
	}
	up, upText := newest()
	down, downText := newest()
	if len(up) != len(ages)+1 || !slices.IsSorted(up) {
		t.Errorf("Newest ascending: %q (%q), want oldest first", upText, up)
	}
	if !slices.IsSortedFunc(down, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("Newest descending: %q (%q), want newest first", downText, down)
	}
}

// RabbitMQ allows queue and exchange names of 255 characters: a work queue, its dead-letter
// exchange and its DLQ so named keep the broker, queue and messages pages within the window.
func TestBrowserLongRabbitNamesFitTheWindow(t *testing.T) {
	long := func(prefix string) string { return prefix + strings.Repeat("x", 255-len(prefix)) }
	work, dlx, dlq, ex := long("work"), long("dlx"), long("dlq"), long("ex")
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	d := rabbittest.Topology{TB: t, Ch: ch}
	d.Exchange(ex, "direct")
	d.Exchange(dlx, "fanout")
	d.Queue(work, amqp.Table{"x-dead-letter-exchange": dlx})
	d.Bind(work, "k", ex)
	d.Queue(dlq, nil)
	d.Bind(dlq, "", dlx)
	ctx := waittest.Context(t, time.Minute)
	for i := range 3 {
		mustDo(t, ch.PublishWithContext(ctx, ex, "k", false, false, amqp.Publishing{MessageId: long(fmt.Sprintf("m%d-", i)), Body: []byte(`{}`)}))
	}
	deliveries, err := ch.Consume(work, "failing", false, false, false, false, nil)
	mustDo(t, err)
	for range 3 {
		mustDo(t, (<-deliveries).Reject(false))
	}
	mustDo(t, ch.Cancel("failing", false))
	rabbittest.WaitDepth(t, ch, dlq, 3, 20*time.Second)
	cfg := rabbittest.Config(t, vhost)
	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\nrabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]\n",
		pgtest.NewDatabase(t), string(cfg.URL), cfg.ManagementURL, vhost))

	b, _ := newBrowser(t)
	shots := os.Getenv("REDRIVE_SCREENSHOTS") != ""
	for _, p := range []struct{ url, ready, shot string }{
		{base + paths.RabbitBroker("main"), `[data-testid="queues-table"]`, "long-names-rabbit"},
		{base + paths.Queue("main", vhost, dlq), `[data-testid="page-header"]`, "long-names-queue"},
		{base + paths.QueueMessages("main", vhost, dlq), `[data-testid="messages-table"]`, "long-names-messages"},
	} {
		shot := p.shot
		if !shots {
			shot = ""
		}
		if w := pageWidth(t, b, p.url, p.ready, shot); w > 1400 {
			t.Errorf("%s: the page is %d px wide in a 1400 px window", p.shot, w)
		}
	}
}
