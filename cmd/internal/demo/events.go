package demo

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"
)

// sentEvent is one event of a demo service's delivered history: the outbox row the relay marked
// SENT and the Kafka record it produced for it, alike — the record's key is the aggregate id, its
// messageId header the event id, its value the payload, its timestamp the row's sent_at. The
// outbox and Kafka are seeded from the same list, so that they agree.
type sentEvent struct {
	EventID, AggregateType, AggregateID, EventType string
	Payload                                        string
	CreatedAt, SentAt                              time.Time
}

// HistorySize is how many delivered (SENT) events the orders outbox and the orders topic hold
// when seeded.
const HistorySize = 5000

// seededAt is the moment the seeded histories end, one per process: SeedOutbox and SeedKafka
// each write the orders history, and their rows and records must be the same to the byte.
var seededAt = sync.OnceValue(time.Now)

// orderHistory is the orders service's delivered history at now: event g (1…HistorySize) is
// evt-%06d, created g×50 s ago and sent a second later, newest first.
func orderHistory(now time.Time) []sentEvent {
	now = now.UTC().Truncate(time.Millisecond) // Kafka timestamps are milliseconds
	out := make([]sentEvent, 0, HistorySize)
	for g := 1; g <= HistorySize; g++ {
		agg, prefix, typ := "Order", "ord-", "OrderCreated"
		switch g % 4 {
		case 1:
			typ = "OrderConfirmed"
		case 2:
			agg, prefix, typ = "Payment", "pay-", "PaymentCaptured"
		case 3:
			agg, prefix, typ = "Shipment", "shp-", "ShipmentDispatched"
		}
		id := fmt.Sprintf("evt-%06d", g)
		aggID := fmt.Sprintf("%s%d", prefix, 10000+g%900)
		created := now.Add(-time.Duration(g*50) * time.Second)
		sum := md5.Sum([]byte(fmt.Sprint(g)))
		payload, _ := json.Marshal(struct {
			MessageID     string    `json:"messageId"`
			EventType     string    `json:"eventType"`
			AggregateID   string    `json:"aggregateId"`
			OccurredAt    time.Time `json:"occurredAt"`
			TraceID       string    `json:"traceId"`
			SchemaVersion int       `json:"schemaVersion"`
			Payload       any       `json:"payload"`
		}{id, typ, aggID, created, hex.EncodeToString(sum[:]), 1, map[string]any{
			"orderId": fmt.Sprintf("ord-%d", 10000+g%900), "customerId": fmt.Sprintf("cus-%d", g%311),
			"amount": math.Round(float64(g%997)*137) / 100, "currency": "EUR", "sku": fmt.Sprintf("SKU-%d", g%50), "qty": 1 + g%4}})
		out = append(out, sentEvent{EventID: id, AggregateType: agg, AggregateID: aggID, EventType: typ,
			Payload: string(payload), CreatedAt: created, SentAt: created.Add(time.Second)})
	}
	return out
}
