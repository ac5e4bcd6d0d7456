package handlers

import (
	"context"
	"encoding/json"
	"html"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/trace"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
)

// statsBroker is a console's client of vhost through p (rabbittest.StatsProxy).
func statsBroker(t *testing.T, p *rabbittest.StatsProxy, vhost string) *rabbit.Broker {
	t.Helper()
	cfg := rabbittest.Config(t, vhost)
	cfg.ManagementURL = p.URL
	b, err := rabbit.New(cfg, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// rowOf is the queue table's row of queue name.
func rowOf(t *testing.T, body, name string) string {
	t.Helper()
	i := strings.Index(body, `data-queue="`+name+`"`)
	if i < 0 {
		t.Fatalf("the list has no row for %s", name)
	}
	row := body[i:]
	return row[:strings.Index(row, "</tr>")]
}

// A broker with its statistics disabled (management.disable_stats, or the metrics collector off
// as RabbitMQ 4.x advises for Prometheus) listed every queue with 0 ready, 0 unacked and 0
// consumers, and the broker's card said "0 messages in them": a DLQ holding 3 dead letters read
// as empty. The counts are unknown: the list and the queue page show "—" with the reason as the
// tooltip, the card says the messages in the DLQs are not reported, and the broker page and the
// queue page say once, above the numbers, that the broker reports no statistics and what to do.
// The messages page, which browses the queue live, shows what it read but not the unacked count
// the statistics would have given.
func TestStatsDisabledShowsUnknownNotZero(t *testing.T) {
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	if _, err := ch.QueueDeclare("work.dlq", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("work", true, false, false, false,
		amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "work.dlq"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := ch.Publish("", "work.dlq", false, false, amqp.Publishing{MessageId: "m-" + strconv.Itoa(i), Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	p := rabbittest.NewStatsProxy(t)
	br := statsBroker(t, p, vhost)
	rabbittest.WaitFor(t, 20*time.Second, "work.dlq's 3 messages reported", func(ctx context.Context) bool {
		qs, err := br.Queues(ctx)
		for _, q := range qs {
			if q.Name == "work.dlq" {
				return err == nil && q.Ready == 3
			}
		}
		return false
	})
	p.Disabled.Store(true)
	h := NewRabbit([]RabbitBroker{br}, freshQueues{br}, func(echo.Context, string, string) layout.Meta { return layout.Meta{} }, nil)
	names := []string{"broker", "vhost", "queue"}
	notice := html.EscapeString(rabbitmodel.StatsDisabledNotice)

	list, err := callAPI(t, h.BrokerPage, "/rabbitmq/test", names[:1], "test")
	if err != nil {
		t.Fatal(err)
	}
	body := list.Body.String()
	if n := strings.Count(body, `data-testid="stats-disabled"`); n != 1 || !strings.Contains(body, notice) {
		t.Errorf("the broker page says the statistics are disabled %d times (the notice there: %v), want once", n, strings.Contains(body, notice))
	}
	if !strings.Contains(body, "messages in them not reported") || strings.Contains(body, "0 messages in them") {
		t.Errorf("the dead-letter queues card adds the unknown counts as 0")
	}
	for _, name := range []string{"work.dlq", "work"} {
		row := rowOf(t, body, name)
		if n := strings.Count(row, `data-testid="unreported"`); n != 7 || !strings.Contains(row, `title="not reported: the broker&#39;s statistics are disabled"`) {
			t.Errorf("%s: %d cells say their number is not reported (with the reason: %v), want 7 (ready, unacked, consumers, 4 rates): %s",
				name, n, strings.Contains(row, "statistics are disabled"), row)
		}
		if strings.Contains(row, `>0</td>`) || strings.Contains(row, `data-sort="0"`) {
			t.Errorf("%s: the row shows or sorts an unknown count as 0: %s", name, row)
		}
	}

	page, err := callAPI(t, h.QueuePage, "/", names, "test", vhost, "work.dlq")
	if err != nil {
		t.Fatal(err)
	}
	qb := page.Body.String()
	if n := strings.Count(qb, `data-testid="stats-disabled"`); n != 1 || !strings.Contains(qb, notice) {
		t.Errorf("the queue page says the statistics are disabled %d times, want once", n)
	}
	stats := qb[strings.Index(qb, `id="queue-stats"`):]
	stats = stats[:strings.Index(stats, `class="panel"`)]
	if strings.Contains(stats, `data-testid="stat-value">0<`) || strings.Count(stats, `data-testid="stat-value">—<`) < 3 {
		t.Errorf("the queue page's numbers: want ready, unacked and consumers shown as —, none as 0: %s", stats)
	}

	msgs, err := callAPI(t, h.MessagesPage, "/?limit=10", names, "test", vhost, "work.dlq")
	if err != nil {
		t.Fatal(err)
	}
	mb := msgs.Body.String()
	if !strings.Contains(mb, "of 3 ready when the browse started") {
		t.Errorf("the messages page does not show the live ready count")
	}
	if !strings.Contains(mb, `data-testid="unreported"`) || !strings.Contains(mb, "unacknowledged messages not reported") {
		t.Errorf("the messages page does not say the unacked count is not known")
	}
}

// Counts not reported for a moment (a queue just declared, a node just restarted) are "—" with
// that reason, and no notice: the broker reports statistics. A broker's card adds only what it
// counted, as "at least".
func TestStatsNotReportedYetShowsUnknown(t *testing.T) {
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	if _, err := ch.QueueDeclare("work.dlq", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	p := rabbittest.NewStatsProxy(t)
	p.Unreported.Store(true)
	br := statsBroker(t, p, vhost)
	h := NewRabbit([]RabbitBroker{br}, freshQueues{br}, func(echo.Context, string, string) layout.Meta { return layout.Meta{} }, nil)
	list, err := callAPI(t, h.BrokerPage, "/rabbitmq/test", []string{"broker"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	body := list.Body.String()
	if strings.Contains(body, `data-testid="stats-disabled"`) {
		t.Errorf("statistics not reported yet read as disabled")
	}
	row := rowOf(t, body, "work.dlq")
	if !strings.Contains(row, `data-testid="unreported"`) || !strings.Contains(row, "not reported yet") || strings.Contains(row, ">0</td>") {
		t.Errorf("the row of a queue not reported yet: %s", row)
	}
}

// An exclusive queue's page offered "Browse messages", which led only to the refusal (ops/rabbit
// refuses to read it: RESOURCE_LOCKED for any other connection). The page says why in place of the
// button, as for an auto-delete queue, and a trace's step there links the queue's page.
func TestExclusiveQueuePageOffersNoBrowse(t *testing.T) {
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	if _, err := ch.QueueDeclare("owned.dlq", false, false, true, false, nil); err != nil {
		t.Fatal(err)
	}
	br, err := rabbit.New(rabbittest.Config(t, vhost), configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	h := NewRabbit([]RabbitBroker{br}, freshQueues{br}, func(echo.Context, string, string) layout.Meta { return layout.Meta{} }, nil)
	page, err := callAPI(t, h.QueuePage, "/", []string{"broker", "vhost", "queue"}, "test", vhost, "owned.dlq")
	if err != nil {
		t.Fatal(err)
	}
	b := page.Body.String()
	if strings.Contains(b, `data-testid="browse-link"`) || !strings.Contains(b, `data-testid="browse-refused"`) ||
		!strings.Contains(b, "an exclusive queue") {
		t.Errorf("the exclusive queue's page offers the browse %v, says why not %v; want no browse, and why",
			strings.Contains(b, `data-testid="browse-link"`), strings.Contains(b, `data-testid="browse-refused"`))
	}
	ref := trace.Ref{Broker: "test", Vhost: vhost, Queue: "owned.dlq", Offset: -1}
	if got, want := stepLink(trace.Step{Kind: trace.KindRabbitMQ, Ref: ref, Detail: "not browsed: queue is exclusive"}), paths.Queue("test", vhost, "owned.dlq"); got != want {
		t.Errorf("a step in the exclusive queue links %s, want its page %s", got, want)
	}
}

// A quorum queue that dead-letters at least once keeps what no queue takes (messages_dlx): the
// page showed 0 ready, 0 unacked and nothing else. The queue page shows them as held for
// dead-lettering, with the strategy, and the list marks the queue; at-least-once asked for
// without overflow reject-publish is at most once, and both pages say RabbitMQ fell back.
func TestDeadLetterHeldAndStrategyShown(t *testing.T) {
	vhost, amqpURL, _ := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	for name, args := range map[string]amqp.Table{
		"kept":     {"x-queue-type": "quorum", "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish", "x-dead-letter-exchange": "nowhere"},
		"fallback": {"x-queue-type": "quorum", "x-dead-letter-strategy": "at-least-once", "x-dead-letter-exchange": "nowhere"},
	} {
		if _, err := ch.QueueDeclare(name, true, false, false, false, args); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b"} {
		if err := ch.Publish("", "kept", false, false, amqp.Publishing{MessageId: id, Body: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	rabbittest.WaitDepth(t, ch, "kept", 2, 10*time.Second)
	for range 2 {
		d, ok, err := ch.Get("kept", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		if err := d.Nack(false, false); err != nil {
			t.Fatal(err)
		}
	}
	br, err := rabbit.New(rabbittest.Config(t, vhost), configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	rabbittest.WaitFor(t, 20*time.Second, "the held dead letters reported", func(ctx context.Context) bool {
		qs, err := br.Queues(ctx)
		for _, q := range qs {
			if q.Name == "kept" {
				return err == nil && q.DeadLetterHeld == 2
			}
		}
		return false
	})
	h := NewRabbit([]RabbitBroker{br}, freshQueues{br}, func(echo.Context, string, string) layout.Meta { return layout.Meta{} }, nil)
	names := []string{"broker", "vhost", "queue"}
	list, err := callAPI(t, h.BrokerPage, "/rabbitmq/test", names[:1], "test")
	if err != nil {
		t.Fatal(err)
	}
	if row := rowOf(t, list.Body.String(), "kept"); !strings.Contains(row, "held for dead-lettering: 2") {
		t.Errorf("the list does not mark the held dead letters: %s", row)
	}
	if row := rowOf(t, list.Body.String(), "fallback"); !strings.Contains(row, `data-testid="dead-letter-fallback"`) {
		t.Errorf("the list does not mark the fallback: %s", row)
	}

	page, err := callAPI(t, h.QueuePage, "/", names, "test", vhost, "kept")
	if err != nil {
		t.Fatal(err)
	}
	kb := page.Body.String()
	if !strings.Contains(kb, "Held for dead-lettering") || !strings.Contains(kb, `data-testid="stat-value">2<`) ||
		!strings.Contains(kb, `data-key="dead-letter strategy"`) || strings.Contains(kb, `data-testid="dead-letter-fallback"`) {
		t.Errorf("the queue page does not show the 2 held for dead-lettering and the strategy")
	}
	page, err = callAPI(t, h.QueuePage, "/", names, "test", vhost, "fallback")
	if err != nil {
		t.Fatal(err)
	}
	if fb := page.Body.String(); !strings.Contains(fb, `data-testid="dead-letter-fallback"`) || !strings.Contains(fb, "fell back to at-most-once") ||
		!strings.Contains(fb, "overflow is drop-head") {
		t.Errorf("the fallback queue's page does not say RabbitMQ fell back to at-most-once and why")
	}
}

// fixedQueues serves one snapshot.
type fixedQueues struct{ snap queues.Snapshot }

func (f fixedQueues) LatestRabbit(context.Context, string) (queues.Snapshot, error) {
	return f.snap, nil
}

func (f fixedQueues) RabbitQueueHistory(context.Context, string, string, string, time.Time, int) ([]history.RabbitQueuePoint, error) {
	return nil, nil
}

// The broker's dead-letter card added a DLQ whose counts were not reported as 0 ("5 messages in
// them" for 5 counted and a DLQ of unknown depth), and the list sorted that DLQ as empty, among
// the empty queues. What was counted is "at least", the uncounted DLQ says so, and the queues of
// unknown depth come after those of known depth, as the table sorts a "—".
func TestUnreportedDLQIsNotAddedAsZero(t *testing.T) {
	q := func(name string, ready int64, unreported bool) queues.Queue {
		return queues.Queue{Queue: rabbitmodel.Queue{Vhost: "/", Name: name, Type: rabbitmodel.TypeClassic, IsDeadLetterQueue: true,
			Ready: ready, CountsUnreported: unreported, ConsumersUnreported: unreported}}
	}
	snap := queues.Snapshot{Broker: "main", At: time.Now(), Queues: []queues.Queue{
		q("a.dlq", 0, true), q("b.dlq", 0, false), q("c.dlq", 5, false)}}
	snap.Queues[0].LastCounted = queues.Counted{At: time.Now().Add(-time.Minute), Ready: 7}
	h := NewRabbit([]RabbitBroker{offlineBroker(t)}, fixedQueues{snap}, func(echo.Context, string, string) layout.Meta { return layout.Meta{} }, nil)
	rec, err := callAPI(t, h.BrokerPage, "/rabbitmq/main", []string{"broker"}, "main")
	if err != nil {
		t.Fatal(err)
	}
	body := rec.Body.String()
	if !strings.Contains(body, "at least 5 messages in them (1 not reported)") {
		t.Errorf("the dead-letter card does not say at least 5, one DLQ not reported")
	}
	if strings.Contains(body, `data-testid="stats-disabled"`) {
		t.Errorf("counts not reported yet read as statistics disabled")
	}
	if a, b, c := strings.Index(body, `data-queue="a.dlq"`), strings.Index(body, `data-queue="b.dlq"`), strings.Index(body, `data-queue="c.dlq"`); !(c < b && b < a) {
		t.Errorf("rows at c %d, b %d, a %d: want c.dlq (5), b.dlq (0), then a.dlq (not known)", c, b, a)
	}
	page, err := callAPI(t, h.QueuePage, "/", []string{"broker", "vhost", "queue"}, "main", "/", "a.dlq")
	if err != nil {
		t.Fatal(err)
	}
	if b := page.Body.String(); !strings.Contains(b, "not reported · 7 when last counted, 1 min") {
		t.Errorf("the queue page does not say what was last counted")
	}
	// The API: an unreported count is null with the reason, never 0; a counted 0 is 0.
	api, err := callAPI(t, h.APIQueues, "/api/v1/rabbitmq/main/queues", []string{"broker"}, "main")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Queues []struct {
			Name      string   `json:"name"`
			Ready     *int64   `json:"ready"`
			Consumers *int64   `json:"consumers"`
			Inflow    *float64 `json:"inflow_rate"`
			Why       string   `json:"stats_not_reported"`
		} `json:"queues"`
	}
	if err := json.Unmarshal(api.Body.Bytes(), &got); err != nil || len(got.Queues) != 3 {
		t.Fatalf("API: %v %s", err, api.Body)
	}
	for _, q := range got.Queues {
		unknown := q.Name == "a.dlq"
		if (q.Ready == nil) != unknown || (q.Consumers == nil) != unknown || (q.Inflow == nil) != unknown || (q.Why != "") != unknown {
			t.Errorf("API %s: ready %v consumers %v inflow %v why %q; unknown: %v", q.Name, q.Ready, q.Consumers, q.Inflow, q.Why, unknown)
		}
	}
}
