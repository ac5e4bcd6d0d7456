package rabbitmq

import (
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/redrive/redrive/views/layout"
	"github.com/redrive/redrive/views/viewtest"
)

// A queue page offers no browse that would be refused: a refusal replaces the button; a cost is
// said beside it.
func TestQueueBrowseCost(t *testing.T) {
	for _, tc := range []struct {
		name             string
		refused, cost    string
		link             bool
		refusal, callout string
	}{
		{name: "Free", link: true},
		{name: "Refused", refused: "Not browsable on RabbitMQ 3.10.8: …", refusal: "Not browsable"},
		{name: "Costly", cost: "Each browse costs every message it reads one of its 20 deliveries", link: true, callout: "one of its 20 deliveries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, _ := viewtest.Render(t, Queue(QueuePage{Meta: layout.Meta{}, Broker: "main", Vhost: "/", Name: "orders.dlq",
				Row: QueueRow{Type: "quorum", DLQ: true}, BrowseRefused: tc.refused, BrowseCost: tc.cost}))
			if got := doc.Find(`[data-testid="browse-link"]`).Length() == 1; got != tc.link {
				t.Errorf("browse link shown %v, want %v", got, tc.link)
			}
			if n := doc.Find(`button[disabled]`).Length(); n != 0 {
				t.Errorf("%d disabled buttons: a refused browse is not offered at all", n)
			}
			if got := doc.Find(`[data-testid="browse-refused"]`).Text(); !strings.Contains(got, tc.refusal) || (tc.refusal == "") != (got == "") {
				t.Errorf("refusal %q, want %q", got, tc.refusal)
			}
			if got := doc.Find(`[data-testid="browse-cost"]`).Text(); !strings.Contains(got, tc.callout) || (tc.callout == "") != (got == "") {
				t.Errorf("cost %q, want %q", got, tc.callout)
			}
		})
	}
}

// A dead-letter queue's ready card says how long it has held dead letters when the samples say.
func TestQueueReadySaysHowLongHeld(t *testing.T) {
	for _, tc := range []struct {
		row  QueueRow
		want string
	}{
		{QueueRow{DLQ: true, Ready: 3, HeldFor: 6*time.Minute + 10*time.Second}, "dead letters held for 6 min 10 s"},
		{QueueRow{DLQ: true, Ready: 3}, "waiting for a consumer"},
		{QueueRow{Ready: 3, HeldFor: time.Minute}, "waiting for a consumer"},
	} {
		doc, _ := viewtest.Render(t, Queue(QueuePage{Broker: "main", Vhost: "/", Name: "q", Row: tc.row}))
		if got := doc.Find("#queue-stats").Text(); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: the cards say %q, want %q in them", tc.row, got, tc.want)
		}
	}
}

// The messages page of a limited quorum queue says what the browse cost at the top, counts each
// message's deliveries, and shows the messages it moved to the archive as such: a link to the
// archive, no box to tick for a replay from the queue they left.
func TestMessagesDeliveries(t *testing.T) {
	p := MessagesPage{Meta: layout.Meta{CanOperate: true}, Broker: "main", Vhost: "/", Queue: "orders.dlq", Limit: 50, Type: "quorum",
		Ready: 3, Read: 3, Complete: true, DeliveryLimit: "20", DeliveryLimitFrom: "RabbitMQ's default for quorum queues",
		BrowseFix: "To browse for free, give dead-letter queues a policy with delivery-limit -1", Kept: 1,
		Notes: []string{"Quorum queue with a delivery limit of 20 (from RabbitMQ's default for quorum queues): this browse cost …"},
		Messages: []MessageView{
			{Position: 0, MessageID: "a", DeliveryCount: 3, DeliveriesLeft: 16, ReplayTo: "orders"},
			{Position: 1, MessageID: "b", DeliveryCount: 18, DeliveriesLeft: 0, Kept: true, ReplayTo: "orders"},
			{Position: 2, MessageID: "c", DeliveryCount: 0, DeliveriesLeft: 19, ReplayTo: "orders"},
		}}
	doc, _ := viewtest.Render(t, Messages(p))
	if got := doc.Find(`[data-testid="browse-cost"]`).Text(); !strings.Contains(got, "Delivery limit 20: each browse costs every message it reads one delivery.") || !strings.Contains(got, "To browse for free") {
		t.Errorf("cost %q", got)
	}
	if doc.Find(`[data-testid="browse-note"]`).Length() != 0 {
		t.Error("the general browse note says nothing of a limit: the cost replaces it")
	}
	summary := doc.Find(`[data-testid="kept-summary"]`)
	if !strings.Contains(summary.Text(), "1 message had fewer than 2 deliveries left and was moved to Redrive's archive") {
		t.Errorf("summary %q", summary.Text())
	}
	if href, _ := summary.Find(`a`).Attr("href"); href != "/archive?broker=main&queue=orders.dlq" {
		t.Errorf("archive link %q", href)
	}
	// The cost comes before what the browse read.
	if html, _ := doc.Find("main").Html(); strings.Index(html, `data-testid="browse-cost"`) > strings.Index(html, `data-testid="messages-table"`) ||
		strings.Index(html, `data-testid="browse-notes"`) > strings.Index(html, `data-testid="stat-card"`) {
		t.Error("the cost and the notes must come before the numbers and the table")
	}
	var cells []string
	doc.Find(`[data-testid="deliveries"]`).Each(func(_ int, s *goquery.Selection) {
		cells = append(cells, strings.Join(strings.Fields(s.Text()), " "))
	})
	want := []string{"deliveries: 3 · 16 left", "deliveries: 18 · 0 left moved to archive", "deliveries: 0 · 19 left"}
	if strings.Join(cells, "|") != strings.Join(want, "|") {
		t.Errorf("deliveries %q, want %q", cells, want)
	}
	if n := doc.Find(`[data-testid="kept"]`).Length(); n != 1 {
		t.Errorf("%d kept marks", n)
	}
	var ticks []string
	doc.Find(`[data-testid="select-message"]`).Each(func(_ int, s *goquery.Selection) {
		ticks = append(ticks, s.AttrOr("value", ""))
	})
	if strings.Join(ticks, ",") != "a,c" {
		t.Errorf("selectable %v: a message moved to the archive is not in the queue to replay", ticks)
	}
	if n := doc.Find(`[data-testid="replay-one"]`).Length(); n != 2 || doc.Find(`[data-testid="kept-replay"]`).Length() != 1 {
		t.Errorf("%d replay forms, %d archive links in the cards", n, doc.Find(`[data-testid="kept-replay"]`).Length())
	}
	if span, _ := doc.Find(`[data-testid="message-detail"] td`).First().Attr("colspan"); span != "9" {
		t.Errorf("detail colspan %q", span)
	}

	// Unlimited: the count alone.
	p.DeliveryLimit, p.BrowseFix, p.Kept, p.Notes = "", "", 0, nil
	p.Messages = []MessageView{{MessageID: "a", DeliveryCount: 2, DeliveriesLeft: -1}}
	doc, _ = viewtest.Render(t, Messages(p))
	if got := strings.TrimSpace(doc.Find(`[data-testid="deliveries"]`).Text()); got != "deliveries: 2" {
		t.Errorf("unlimited: %q", got)
	}
	if doc.Find(`[data-testid="browse-note"]`).Length() != 1 || doc.Find(`[data-testid="kept-summary"]`).Length() != 0 {
		t.Error("unlimited: the general note, no summary")
	}
	// A classic queue counts nothing.
	p.Type = "classic"
	doc, _ = viewtest.Render(t, Messages(p))
	if doc.Find(`[data-testid="deliveries"]`).Length() != 0 || doc.Find(`[data-testid="deliveries-header"]`).Length() != 0 {
		t.Error("classic: no deliveries column")
	}
}

// A refused browse offers no browse again: no form that leads to the same refusal.
func TestMessagesRefusedOffersNoBrowse(t *testing.T) {
	doc, _ := viewtest.Render(t, Messages(MessagesPage{Broker: "main", Vhost: "/", Queue: "invoices", Limit: 50, Filter: "true",
		Refused: "quorum queue \"invoices\" has a delivery limit of 3"}))
	if doc.Find(`[data-testid="refused"]`).Length() != 1 || doc.Find(`[data-testid="browse-form"]`).Length() != 0 ||
		doc.Find(`form[method="get"]`).Length() != 0 {
		t.Error("a refused browse shows the refusal and no browse form")
	}
}
