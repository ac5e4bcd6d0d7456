package rabbitmq

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/redrive/redrive/views/viewtest"
)

// A browse that may miss messages says so on the page: the held count and the notes.
func TestMessagesIncomplete(t *testing.T) {
	note := "12 messages are held unacknowledged by 2 consumers and are not shown; the list may be partial."
	for _, c := range []struct {
		name     string
		complete bool
		wantCard bool
	}{{"Partial", false, true}, {"Complete", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			p := MessagesPage{Broker: "main", Vhost: "/", Queue: "orders.dlq", Limit: 50, Type: "classic", Ready: 38,
				Consumers: 2, Read: 38, Complete: c.complete}
			if !c.complete {
				p.Unacked, p.Notes = 12, []string{note}
			}
			doc, _ := viewtest.Render(t, Messages(p))
			var card *goquery.Selection
			doc.Find(`[data-testid="stat-card"]`).Each(func(_ int, s *goquery.Selection) {
				if s.Find(`[data-testid="stat-label"]`).Text() == "Held by others" {
					card = s
				}
			})
			if (card != nil) != c.wantCard {
				t.Fatalf("held-by-others card shown: %v, want %v", card != nil, c.wantCard)
			}
			if card != nil && strings.TrimSpace(card.Find(`[data-testid="stat-value"]`).Text()) != "12" {
				t.Errorf("held by others: %q", card.Find(`[data-testid="stat-value"]`).Text())
			}
			if got := doc.Find(`[data-testid="browse-notes"]`).Text(); c.wantCard && !strings.Contains(got, note) {
				t.Errorf("notes %q", got)
			}
		})
	}
}
