package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/chromedp"
	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
)

// mgmtGet reads path of the test broker's management API (as the AMQP URL's user) into v.
func mgmtGet(t *testing.T, path string, v any) {
	t.Helper()
	amqpURL, mgmtURL := rabbittest.Env(t)
	u, err := amqp.ParseURI(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("GET", strings.TrimRight(mgmtURL, "/")+"/api/"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(u.Username, u.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("management API %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("management API %s: %v: %s", path, err, body)
	}
}

// rabbitMajor is the test broker's RabbitMQ major version (3 for 3.10, 4 for 4.0), from its
// management API: what the tests below expect depends on the series.
func rabbitMajor(t *testing.T) int {
	t.Helper()
	var ov struct {
		Version string `json:"rabbitmq_version"`
	}
	mgmtGet(t, "overview", &ov)
	major, err := strconv.Atoi(strings.SplitN(ov.Version, ".", 2)[0])
	if err != nil {
		t.Fatalf("rabbitmq_version %q", ov.Version)
	}
	return major
}

// mgmtDeliveryLimit is the management API's own delivery_limit of a queue: ("20", true),
// ("unlimited", true), or ("", false) when it does not report one (3.x, classic queues, streams,
// or a quorum queue whose statistics have not come yet).
func mgmtDeliveryLimit(t *testing.T, vhost, queue string) (string, bool) {
	t.Helper()
	var q struct {
		DeliveryLimit json.RawMessage `json:"delivery_limit"`
	}
	mgmtGet(t, "queues/"+url.PathEscape(vhost)+"/"+url.PathEscape(queue), &q)
	if len(q.DeliveryLimit) == 0 || string(q.DeliveryLimit) == "null" {
		return "", false
	}
	return strings.Trim(string(q.DeliveryLimit), `"`), true
}

// limitWorld is a vhost of quorum queues with and without delivery limits beside a classic queue
// and a stream, each holding a few messages, and a console watching it (sampled every second):
//   - orders.dlq (quorum, no limit set: 4.x's default of 20) holds 6 orders orders.work's
//     consumer rejected;
//   - five.dlq (x-delivery-limit 5), policy.dlq (a policy's delivery-limit 7), classic.dlq and, on
//     4.x, unlimited.dlq (x-delivery-limit -1) hold 3 messages each; events.stream holds 3.
//
// unlimited.dlq is a 4.x queue: RabbitMQ 3.10 accepts the argument x-delivery-limit -1 (its
// policies refuse -1) and then drops a message of the queue at its first return — measured: one
// basic.get and nack(requeue) of such a queue emptied it. On 3.x the world has negative.dlq
// instead, declared so but left empty, whose page must offer no browse; what the API says of its
// limit is not asserted (the console reads it as none).
type limitWorld struct {
	base, vhost string
	major       int
	ch          *amqp.Channel
}

// limits is what every queue of the world has as its effective delivery limit on this series.
func (w limitWorld) limits() map[string]*int64 {
	n := func(v int64) *int64 { return &v }
	want := map[string]*int64{"orders.dlq": nil, "orders.work": nil, "five.dlq": n(5), "policy.dlq": n(7),
		"classic.dlq": nil, "events.stream": nil}
	if w.major >= 4 {
		want["orders.dlq"], want["unlimited.dlq"] = n(20), nil
	}
	return want
}

func newLimitWorld(t *testing.T) limitWorld {
	t.Helper()
	major := rabbitMajor(t)
	vhost, amqpURL, mgmt := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	top := rabbittest.Topology{TB: t, Ch: ch}
	top.OrdersWith("orders.work", "order.created", amqp.Table{"x-queue-type": "quorum"})
	// apply-to queues: 3.10 knows no quorum_queues.
	if _, err := mgmt.PutPolicy(vhost, "dlq-limit", rabbithole.Policy{Pattern: `^policy\.dlq$`, ApplyTo: "queues",
		Definition: rabbithole.PolicyDefinition{"delivery-limit": 7}}); err != nil {
		t.Fatal(err)
	}
	top.Queue("five.dlq", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(5)})
	top.Queue("policy.dlq", amqp.Table{"x-queue-type": "quorum"})
	top.Queue("classic.dlq", nil)
	top.Queue("events.stream", amqp.Table{"x-queue-type": "stream"})
	filled := []string{"five.dlq", "policy.dlq", "classic.dlq", "events.stream"}
	if major >= 4 {
		top.Queue("unlimited.dlq", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(-1)})
		filled = append(filled, "unlimited.dlq")
	} else {
		top.Queue("negative.dlq", amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int32(-1)})
	}
	for _, q := range filled {
		for i := range 3 {
			c, err := ch.PublishWithDeferredConfirm("", q, true, false, amqp.Publishing{MessageId: fmt.Sprintf("%s-%d", q, i),
				DeliveryMode: amqp.Persistent, ContentType: "application/json", Body: []byte(fmt.Sprintf(`{"n":%d}`, i))})
			if err != nil || !c.Wait() {
				t.Fatalf("publish to %s: %v", q, err)
			}
		}
	}
	for i := range 6 {
		c, err := ch.PublishWithDeferredConfirm("orders", "order.created", true, false, amqp.Publishing{MessageId: fmt.Sprintf("ord-%d", i),
			DeliveryMode: amqp.Persistent, ContentType: "application/json", Body: []byte(fmt.Sprintf(`{"orderId":"o-%d"}`, i))})
		if err != nil || !c.Wait() {
			t.Fatalf("publish order %d: %v", i, err)
		}
	}
	ds, err := ch.Consume("orders.work", "failing", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if err := (<-ds).Reject(false); err != nil {
			t.Fatal(err)
		}
	}
	if err := ch.Cancel("failing", false); err != nil {
		t.Fatal(err)
	}
	rabbittest.WaitDepth(t, ch, "orders.dlq", 6, 20*time.Second)
	amqpBase, mgmtURL := rabbittest.Env(t)
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
sampler: {interval: 1s}
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
`, pgtest.NewDatabase(t), amqpBase, mgmtURL, vhost))
	w := limitWorld{base: base, vhost: vhost, major: major, ch: ch}
	w.awaitSample(t)
	return w
}

// awaitSample waits until the console's queue list has every queue of the world with its
// delivery limit: the management API reports a quorum queue's policy and 4.x's delivery_limit
// from statistics the queue emits every 5 s.
func (w limitWorld) awaitSample(t *testing.T) {
	t.Helper()
	want := w.limits()
	var last string
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		r := do(t, nil, "GET", w.base+"/api/v1/rabbitmq/main/queues", "", "")
		last = r.body
		got := map[string]*int64{}
		for _, q := range decode[apiQueues](t, r).Queues {
			if _, ok := want[q.Name]; ok {
				got[q.Name] = q.DeliveryLimit
			}
		}
		if len(got) == len(want) && fmt.Sprint(limitTexts(got)) == fmt.Sprint(limitTexts(want)) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("on RabbitMQ %d.x the queue list never had the delivery limits %v: %.2000s", w.major, limitTexts(want), last)
}

func limitTexts(m map[string]*int64) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = "null"
		if v != nil {
			out[k] = strconv.FormatInt(*v, 10)
		}
	}
	return out
}

// browsed is the messages API's answer as the tests read it.
type browsed struct {
	DeliveryLimit     *int64   `json:"delivery_limit"`
	DeliveryLimitFrom string   `json:"delivery_limit_from"`
	Kept              int      `json:"kept"`
	Notes             []string `json:"notes"`
	Messages          []struct {
		MessageID      string            `json:"message_id"`
		Headers        map[string]string `json:"headers"`
		DeliveryCount  int64             `json:"delivery_count"`
		DeliveriesLeft *int64            `json:"deliveries_left"`
		Kept           bool              `json:"kept"`
	} `json:"messages"`
}

func (w limitWorld) browse(t *testing.T, queue string) (browsed, response) {
	t.Helper()
	r := do(t, nil, "GET", w.base+"/api/v1/rabbitmq/main/queues/"+url.PathEscape(w.vhost)+"/"+url.PathEscape(queue)+"/messages?limit=10", "", "")
	if r.status != 200 {
		return browsed{}, r
	}
	return decode[browsed](t, r), r
}

// checkCounts requires each message's delivery count to be its x-delivery-count header (0
// without one) and what it has left to follow from the limit: limit − count − 1 (this browse's
// return), 0 when kept, null without a limit.
func checkCounts(t *testing.T, queue string, b browsed) {
	t.Helper()
	for _, m := range b.Messages {
		header, _ := strconv.ParseInt(m.Headers["x-delivery-count"], 10, 64)
		var want *int64
		if b.DeliveryLimit != nil {
			left := max(*b.DeliveryLimit-m.DeliveryCount-1, 0)
			if m.Kept {
				left = 0
			}
			want = &left
		}
		if m.DeliveryCount != header || fmt.Sprint(ptrText(m.DeliveriesLeft)) != fmt.Sprint(ptrText(want)) {
			t.Errorf("%s %s: delivery_count %d (header %q), deliveries_left %s, want %d and %s (limit %s)", queue, m.MessageID,
				m.DeliveryCount, m.Headers["x-delivery-count"], ptrText(m.DeliveriesLeft), header, ptrText(want), ptrText(b.DeliveryLimit))
		}
	}
}

func ptrText(p *int64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatInt(*p, 10)
}

// page is a console page parsed, with its status.
func (w limitWorld) page(t *testing.T, path string) (*goquery.Document, int) {
	t.Helper()
	r := do(t, nil, "GET", w.base+path, "", "")
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	return doc, r.status
}

func (w limitWorld) queuePage(queue string) string {
	return "/rabbitmq/main/queues/" + url.PathEscape(w.vhost) + "/" + url.PathEscape(queue)
}

// The effective delivery limit is on every queue of the API, an integer or null, as the broker
// itself has it (its management API's delivery_limit on 4.0); each browse says what it counted
// against and what each message has left; the pages offer a browse only where it is not refused
// and say what it costs where it costs deliveries; and a message a browse would leave with fewer
// than 2 deliveries goes to the archive, shown as moved there. On 3.10 and 4.0.
func TestRabbitDeliveryLimitsPerSeries(t *testing.T) {
	w := newLimitWorld(t)
	want := w.limits()
	t.Logf("RabbitMQ %d.x", w.major)

	t.Run("QueueList", func(t *testing.T) {
		r := do(t, nil, "GET", w.base+"/api/v1/rabbitmq/main/queues", "", "")
		raw := decode[struct {
			Queues []map[string]any `json:"queues"`
		}](t, r)
		if len(raw.Queues) != 7 {
			t.Fatalf("%d queues: %s", len(raw.Queues), r.body)
		}
		for _, q := range raw.Queues {
			v, ok := q["delivery_limit"]
			n, isNum := v.(float64)
			if !ok || (v != nil && (!isNum || n != math.Trunc(n))) {
				t.Errorf("%v: delivery_limit %#v, want an integer or null", q["name"], v)
			}
		}
	})

	t.Run("OneQueue", func(t *testing.T) {
		for name, limit := range want {
			r := do(t, nil, "GET", w.base+queuePath(w.vhost, name), "", "")
			raw := decode[map[string]any](t, r)
			v, ok := raw["delivery_limit"]
			got := "null"
			if n, isNum := v.(float64); isNum && n == math.Trunc(n) {
				got = strconv.FormatInt(int64(n), 10)
			} else if v != nil {
				got = fmt.Sprintf("%#v", v)
			}
			if r.status != 200 || !ok || got != ptrText(limit) {
				t.Errorf("%s: %d delivery_limit %s (present %v), want %s", name, r.status, got, ok, ptrText(limit))
			}
		}
	})

	// The broker's own figure: 4.0's management API has delivery_limit per quorum queue (a
	// number, or "unlimited"); 3.10's has none, and the console's comes from the arguments and
	// policies.
	t.Run("AsTheBrokerHasIt", func(t *testing.T) {
		for _, name := range []string{"orders.dlq", "five.dlq", "unlimited.dlq", "policy.dlq"} {
			if _, ok := want[name]; !ok {
				continue
			}
			var mgmt string
			var reported bool
			rabbittest.WaitFor(t, 20*time.Second, name+"'s statistics in the management API", func(context.Context) bool {
				mgmt, reported = mgmtDeliveryLimit(t, w.vhost, name)
				return reported || w.major < 4
			})
			ours := ptrText(want[name])
			switch {
			case w.major >= 4 && !(mgmt == ours || mgmt == "unlimited" && ours == "null"):
				t.Errorf("%s: the management API says delivery_limit %s, the console %s", name, mgmt, ours)
			case w.major < 4 && reported:
				t.Logf("%s: RabbitMQ %d.x reports delivery_limit %s", name, w.major, mgmt)
			}
		}
	})

	t.Run("BrowseCounts", func(t *testing.T) {
		for _, q := range []string{"classic.dlq", "unlimited.dlq", "orders.dlq", "events.stream"} {
			if _, ok := want[q]; !ok {
				continue
			}
			for round := range 2 {
				b, r := w.browse(t, q)
				if r.status != 200 || len(b.Messages) == 0 || ptrText(b.DeliveryLimit) != ptrText(want[q]) || b.Kept != 0 ||
					(b.DeliveryLimit != nil) != (b.DeliveryLimitFrom != "") || !strings.Contains(r.body, `"delivery_limit":`) {
					t.Fatalf("%s round %d: %d %.600s", q, round, r.status, r.body)
				}
				checkCounts(t, q, b)
				if q == "orders.dlq" && round == 1 && b.Messages[0].DeliveryCount < 1 {
					t.Errorf("orders.dlq: the second browse sees delivery_count %d, want the first browse counted",
						b.Messages[0].DeliveryCount)
				}
			}
		}
	})

	t.Run("QueuePages", func(t *testing.T) {
		for _, tc := range []struct {
			queue   string
			refused bool     // 3.x only
			cost    []string // 4.x only
		}{
			{queue: "orders.dlq", cost: []string{"one of its 20 deliveries", "RabbitMQ 4's default",
				`rabbitmqctl set_policy -p '` + w.vhost + `' --apply-to quorum_queues dlq-unlimited-orders.dlq '^orders\.dlq$' '{"delivery-limit":-1}'`}},
			{queue: "five.dlq", refused: true, cost: []string{"one of its 5 deliveries", "x-delivery-limit argument", "shovel"}},
			{queue: "policy.dlq", refused: true, cost: []string{"one of its 7 deliveries", `to the definition of policy "dlq-limit"`}},
			{queue: "unlimited.dlq"}, {queue: "classic.dlq"}, {queue: "events.stream"},
			{queue: "negative.dlq", refused: true},
		} {
			if _, inWorld := want[tc.queue]; !inWorld && (tc.queue != "negative.dlq" || w.major >= 4) {
				continue
			}
			doc, status := w.page(t, w.queuePage(tc.queue))
			refusal := doc.Find(`[data-testid="browse-refused"]`).Text()
			cost := doc.Find(`[data-testid="browse-cost"]`).Text()
			links := doc.Find(`[data-testid="browse-link"]`).Length()
			switch {
			case status != 200:
				t.Errorf("%s: %d", tc.queue, status)
			case w.major < 4 && tc.refused:
				if links != 0 || !strings.Contains(refusal, "Not browsable on RabbitMQ 3.") || cost != "" {
					t.Errorf("%s on 3.x: %d browse links, refusal %q, cost %q", tc.queue, links, refusal, cost)
				}
			case w.major >= 4 && len(tc.cost) > 0:
				if links != 1 || refusal != "" {
					t.Errorf("%s on 4.x: %d browse links, refusal %q", tc.queue, links, refusal)
				}
				for _, c := range tc.cost {
					if !strings.Contains(cost, c) {
						t.Errorf("%s on 4.x: the cost lacks %q: %s", tc.queue, c, cost)
					}
				}
			default:
				if links != 1 || refusal != "" || cost != "" {
					t.Errorf("%s: %d browse links, refusal %q, cost %q: browsing it costs nothing that counts", tc.queue, links, refusal, cost)
				}
			}
		}
	})

	// five.dlq: refused on 3.x, without a browse form to try again; on 4.x three browses cost
	// each message three of its five deliveries, and the fourth (the page's) moves all three to
	// the archive instead of returning them with one left.
	t.Run("NearTheLimit", func(t *testing.T) {
		msgs := "/rabbitmq/main/queues/" + url.PathEscape(w.vhost) + "/five.dlq/messages?limit=10"
		if w.major < 4 {
			_, r := w.browse(t, "five.dlq")
			if r.status != 409 || !strings.Contains(r.body, "delivery limit of 5") {
				t.Errorf("API on 3.x: %d %s", r.status, r.body)
			}
			doc, status := w.page(t, msgs)
			if status != 409 || doc.Find(`[data-testid="refused"]`).Length() != 1 || doc.Find(`[data-testid="browse-form"]`).Length() != 0 {
				t.Errorf("page on 3.x: %d, refused shown %d, browse forms %d", status, doc.Find(`[data-testid="refused"]`).Length(),
					doc.Find(`[data-testid="browse-form"]`).Length())
			}
			return
		}
		for round := range 3 {
			b, r := w.browse(t, "five.dlq")
			if r.status != 200 || len(b.Messages) != 3 || b.Kept != 0 || ptrText(b.DeliveryLimit) != "5" {
				t.Fatalf("round %d: %d %.600s", round, r.status, r.body)
			}
			checkCounts(t, "five.dlq", b)
			for _, m := range b.Messages {
				if m.DeliveryCount != int64(round) {
					t.Errorf("round %d: %s delivery_count %d", round, m.MessageID, m.DeliveryCount)
				}
			}
		}
		doc, status := w.page(t, msgs)
		summary := strings.Join(strings.Fields(doc.Find(`[data-testid="kept-summary"]`).Text()), " ")
		if status != 200 || !strings.Contains(summary, "3 messages had fewer than 2 deliveries left and were moved to Redrive's archive") {
			t.Fatalf("page: %d, summary %q", status, summary)
		}
		if href, _ := doc.Find(`[data-testid="kept-archive-link"]`).Attr("href"); href != "/archive?broker=main&queue=five.dlq" {
			t.Errorf("archive link %q", href)
		}
		if n, ticks := doc.Find(`[data-testid="kept"]`).Length(), doc.Find(`[data-testid="select-message"]`).Length(); n != 3 || ticks != 0 {
			t.Errorf("%d rows marked moved to the archive, %d to tick for a replay from the queue", n, ticks)
		}
		if cost := doc.Find(`[data-testid="browse-cost"]`).Text(); !strings.Contains(cost, "Delivery limit 5") || !strings.Contains(cost, "shovel") {
			t.Errorf("cost %q", cost)
		}
		rabbittest.WaitDepth(t, w.ch, "five.dlq", 0, 10*time.Second)
		r := do(t, nil, "GET", w.base+"/api/v1/archive?broker=main&queue=five.dlq", "", "")
		archived := decode[struct {
			Messages []struct {
				MessageID string `json:"message_id"`
				By        string `json:"by"`
			} `json:"messages"`
		}](t, r)
		var ids []string
		for _, m := range archived.Messages {
			ids = append(ids, m.MessageID+" by "+m.By)
		}
		if len(ids) != 3 || !strings.Contains(strings.Join(ids, ","), "five.dlq-0 by redrive (custody)") {
			t.Errorf("archive of five.dlq: %v", ids)
		}
		// The archive has them now; the API's next browse says the queue is empty, and costs nothing.
		b, _ := w.browse(t, "five.dlq")
		if len(b.Messages) != 0 || b.Kept != 0 {
			t.Errorf("after custody: %+v", b)
		}
	})
}

// What a person sees of a quorum dead-letter queue's delivery limit, in a real browser: the queue
// page of orders.dlq offers the browse (on 4.x saying, before the click, what each browse costs);
// its messages page puts that cost above the numbers and the table and gives each message its
// deliveries; five.dlq (a limit of 5) is refused on 3.x with no button to click, and on 4.x the
// browse that would leave its messages one delivery moves them to the archive, which the page says
// and links to. On 3.10 and 4.0; the screenshots are rabbitmq-quorum-*.png.
func TestBrowserQuorumDLQCost(t *testing.T) {
	w := newLimitWorld(t)
	ctx, _ := newBrowser(t)
	v4 := w.major >= 4

	act(t, ctx, chromedp.Navigate(w.base+w.queuePage("orders.dlq")), chromedp.WaitVisible(`[data-testid="browse-link"]`))
	screenshot(t, ctx, "rabbitmq-quorum-dlq-queue")
	if costs := countOf(t, ctx, `[data-testid="browse-cost"]`); costs != map[bool]int{true: 1, false: 0}[v4] {
		t.Errorf("orders.dlq's queue page on %d.x: %d cost callouts", w.major, costs)
	}
	act(t, ctx, chromedp.Click(`[data-testid="browse-link"]`), chromedp.WaitVisible(`[data-testid="messages-table"]`))
	screenshot(t, ctx, "rabbitmq-quorum-dlq-messages")
	cells := must(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="deliveries"]')).map(e => e.innerText.trim())`))
	if len(cells) != 6 {
		t.Fatalf("deliveries cells %q", cells)
	}
	for _, c := range cells {
		if ok := strings.HasPrefix(c, "deliveries: ") && strings.HasSuffix(c, " left") == v4; !ok {
			t.Errorf("deliveries cell %q on %d.x", c, w.major)
		}
	}
	if v4 {
		// Prominent: in the first screenful, above the numbers and the table.
		pos := must(t, ctx, chromedp.Evaluate[[]float64](`[document.querySelector('[data-testid="browse-cost"]').getBoundingClientRect().top,
			document.querySelector('.stats').getBoundingClientRect().top,
			document.querySelector('[data-testid="messages-table"]').getBoundingClientRect().top, window.innerHeight]`))
		if pos[0] > pos[1] || pos[0] > pos[2] || pos[0] > pos[3] {
			t.Errorf("the cost is at %v px, the numbers at %v, the table at %v, the window %v high", pos[0], pos[1], pos[2], pos[3])
		}
		cost := must(t, ctx, chromedp.Text(`[data-testid="browse-cost"]`))
		if !strings.Contains(cost, "Delivery limit 20") || !strings.Contains(cost, "rabbitmqctl set_policy") {
			t.Errorf("cost %q", cost)
		}
	}

	if !v4 {
		act(t, ctx, chromedp.Navigate(w.base+w.queuePage("five.dlq")), chromedp.WaitVisible(`[data-testid="browse-refused"]`))
		screenshot(t, ctx, "rabbitmq-quorum-refused")
		if n := countOf(t, ctx, `[data-testid="browse-link"], main button[disabled]`); n != 0 {
			t.Errorf("five.dlq on 3.x: %d browse buttons", n)
		}
		return
	}
	for range 3 {
		if _, r := w.browse(t, "five.dlq"); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	act(t, ctx, chromedp.Navigate(w.base+w.queuePage("five.dlq")), chromedp.WaitVisible(`[data-testid="browse-cost"]`))
	screenshot(t, ctx, "rabbitmq-quorum-five-queue")
	act(t, ctx, chromedp.Click(`[data-testid="browse-link"]`), chromedp.WaitVisible(`[data-testid="kept-summary"]`))
	screenshot(t, ctx, "rabbitmq-quorum-kept")
	summary := must(t, ctx, chromedp.Text(`[data-testid="kept-summary"]`))
	kept := countOf(t, ctx, `[data-testid="kept"]`)
	if !strings.Contains(summary, "3 messages had fewer than 2 deliveries left and were moved to Redrive's archive") || kept != 3 {
		t.Errorf("summary %q, %d rows marked", summary, kept)
	}
	act(t, ctx, chromedp.Click(`[data-testid="kept-archive-link"]`), chromedp.WaitVisible(`[data-testid="archive-table"]`))
	screenshot(t, ctx, "rabbitmq-quorum-kept-archive")
	if rows := countOf(t, ctx, `[data-testid="archive-row"]`); rows != 3 {
		t.Errorf("the archive of five.dlq shows %d rows", rows)
	}
}
