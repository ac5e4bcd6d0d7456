// Package demo seeds realistic data into the local stack for `make demo`: an orders outbox in
// every state (with stuck leases and dead events), an inventory inbox, and later Kafka and
// RabbitMQ dead letters.
package demo

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
)

// SeedOutbox fills the outbox of dsn (creating the seed's table) unless it already holds rows.
func SeedOutbox(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("demo: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, pgoutbox.SeedDDL+pginbox.SeedDDL); err != nil {
		return fmt.Errorf("demo: create tables: %w", err)
	}
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM outbox_event`).Scan(&n); err != nil || n > 0 {
		return err
	}
	// Three days of delivered history, the same events SeedKafka produces to the orders topic.
	// Times are UTC, as a relay writing TIMESTAMP columns would.
	history := orderHistory(seededAt())
	rows := make([][]any, len(history))
	for i, e := range history {
		rows[i] = []any{e.EventID, e.AggregateType, e.AggregateID, e.EventType, 1, e.Payload, "SENT", 1,
			e.CreatedAt, e.CreatedAt, e.SentAt}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"outbox_event"}, []string{"event_id", "aggregate_type", "aggregate_id",
		"event_type", "schema_version", "payload", "status", "attempts", "available_at", "created_at", "sent_at"},
		pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("demo: seed outbox: %w", err)
	}
	_, err = conn.Exec(ctx, `SET timezone = 'UTC';
-- A READY backlog: most due (the relay is behind), a few scheduled for later retries.
INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
    status, attempts, available_at, created_at)
SELECT 'evt-r' || g, 'Order', 'ord-' || (20000 + g), 'OrderCreated', 1,
       json_build_object('messageId', 'evt-r' || g, 'orderId', 'ord-' || (20000 + g), 'amount', g * 3.5)::text,
       'READY', CASE WHEN g > 30 THEN 2 ELSE 0 END,
       CASE WHEN g > 30 THEN now() + make_interval(secs => g * 20) ELSE now() - make_interval(secs => 420 - g * 10) END,
       now() - make_interval(secs => 450 - g * 10)
FROM generate_series(1, 40) g;

-- In flight: seven live leases and five whose relay died (lease expired minutes ago).
INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
    status, attempts, available_at, locked_until, created_at)
SELECT 'evt-p' || g, 'Payment', 'pay-' || (30000 + g), 'PaymentCaptured', 1,
       json_build_object('messageId', 'evt-p' || g, 'paymentId', 'pay-' || (30000 + g))::text,
       'PROCESSING', 1, now() - interval '2 minutes',
       CASE WHEN g <= 5 THEN now() - make_interval(secs => 60 * g) ELSE now() + interval '25 seconds' END,
       now() - interval '3 minutes'
FROM generate_series(1, 12) g;

-- Temporary failures waiting for their next attempt.
INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
    status, attempts, available_at, last_error, created_at)
SELECT 'evt-f' || g, 'Shipment', 'shp-' || (40000 + g), 'ShipmentDispatched', 1,
       json_build_object('messageId', 'evt-f' || g, 'shipmentId', 'shp-' || (40000 + g))::text,
       'FAILED', 1 + g % 4, now() + make_interval(secs => 30 * g),
       (ARRAY['org.apache.kafka.common.errors.TimeoutException: Expiring 1 record(s) for shipments-2: 30001 ms has passed since batch creation',
              'org.apache.kafka.common.errors.NotLeaderOrFollowerException: This server is not the leader for that topic-partition.'])[1 + g % 2],
       now() - make_interval(secs => 600 + g * 30)
FROM generate_series(1, 15) g;

-- Dead events: past max attempts, with the errors that killed them.
INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
    status, attempts, available_at, last_error, created_at)
SELECT 'evt-d' || g, 'Order', 'ord-' || (50000 + g), (ARRAY['OrderCreated','OrderCancelled','OrderRefunded'])[1 + g % 3],
       (1 + g % 2),
       CASE WHEN g = 7 THEN 'not json: <order id=' || g || '>'
            ELSE json_build_object('messageId', 'evt-d' || g, 'orderId', 'ord-' || (50000 + g),
                 'lines', json_build_array(json_build_object('sku', 'SKU-' || g, 'qty', g % 5 + 1)))::text END,
       'DEAD', 10, now() - make_interval(secs => 3600 * g),
       (ARRAY['org.apache.kafka.common.errors.RecordTooLargeException: The message is 1310720 bytes when serialized which is larger than 1048576',
              'org.apache.kafka.common.errors.SerializationException: Can''t serialize data [OrderRefunded] for topic [orders]',
              'org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: [orders.v2]',
              'java.lang.IllegalStateException: schema_version 2 is not registered for OrderCancelled'])[1 + g % 4],
       now() - make_interval(secs => 3600 * g + 900)
FROM generate_series(1, 25) g;

-- What the inventory service has already processed (a third of the history) or received and not
-- finished (a tenth): some dead letters are then already applied, some ambiguous.
INSERT INTO inbox_message (message_id, consumer, received_at, processed_at)
SELECT 'evt-' || lpad(g::text, 6, '0'), 'inventory-service', now() - make_interval(secs => g * 50),
       CASE WHEN g % 3 = 0 THEN now() - make_interval(secs => g * 50 - 1) END
FROM generate_series(1, 5000) g
WHERE g % 3 = 0 OR g % 10 = 1
ON CONFLICT DO NOTHING;
ANALYZE outbox_event;`)
	if err != nil {
		return fmt.Errorf("demo: seed outbox: %w", err)
	}
	return nil
}
