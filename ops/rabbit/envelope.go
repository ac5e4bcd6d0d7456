package rabbit

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"sort"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"
)

// brokerHeaders are headers a broker sets on a delivery about that delivery, not about the
// message: a quorum queue's x-delivery-count (failed deliveries) and, from RabbitMQ 4.3,
// x-acquired-count (every delivery, a browse's included). They change each time the message is
// read, so what names a message (custodyLocator, envelopeDigest) leaves them out, and a copy
// published from it starts fresh: a quorum queue on RabbitMQ 4.x keeps a client-set
// x-delivery-count, so a replayed copy arrived with the dead letter's 10 deliveries, and a consumer
// that parks a message at N deliveries took the replay for poison. Redrive's own headers carry the
// history.
var brokerHeaders = []string{"x-delivery-count", "x-acquired-count"}

// isBrokerHeader reports whether k is one of brokerHeaders, whatever its case.
func isBrokerHeader(k string) bool {
	for _, b := range brokerHeaders {
		if strings.EqualFold(k, b) {
			return true
		}
	}
	return false
}

// dropBrokerHeaders removes brokerHeaders from h.
func dropBrokerHeaders(h amqp.Table) {
	for k := range h {
		if isBrokerHeader(k) {
			delete(h, k)
		}
	}
}

// writeHeaders writes t to h in key order, but for brokerHeaders: the same message read twice
// writes the same bytes.
func writeHeaders(h hash.Hash, t amqp.Table) {
	keys := make([]string, 0, len(t))
	for k := range t {
		if !isBrokerHeader(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\x00", k, renderValue(t[k]))
	}
}

// envelopeDigest is the SHA-256 of all a delivery carries besides its body and delivery tag: the
// exchange and routing key it came by, its properties and its headers but brokerHeaders. A copy
// the broker returns (a lost ack, a browse's requeue) has its original's; a message published
// twice with one body seldom does — the producer's timestamp, a header of its own, the time in the
// x-death table of when it died tell them apart. See rabbitmodel.Message.Envelope.
func envelopeDigest(d amqp.Delivery) [32]byte {
	h := sha256.New()
	ts := ""
	if !d.Timestamp.IsZero() {
		ts = d.Timestamp.UTC().Format("2006-01-02T15:04:05Z")
	}
	for _, s := range []string{d.Exchange, d.RoutingKey, d.MessageId, d.CorrelationId, d.Type, d.ContentType, d.ContentEncoding,
		d.AppId, d.UserId, d.Expiration, d.ReplyTo, ts, fmt.Sprint(d.DeliveryMode, d.Priority)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	writeHeaders(h, d.Headers)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
