package rabbitmodel

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"
)

// Browse limits.
const (
	MaxBrowse    = 500       // largest Browse limit
	MaxBodyBytes = 256 << 10 // Message.Body is cut at this many bytes
	// MaxQuorumBrowse is how many ready messages a quorum queue may hold for a Browse (a page) to
	// read it: a browse of a quorum queue reads all of them (see Browse). Peek reads up to MaxPeek.
	MaxQuorumBrowse = 10_000
)

// Header is one AMQP header, its value rendered for display: strings as they are, byte arrays as
// text (hex when not UTF-8), timestamps in RFC 3339, tables and arrays as compact JSON-like text.
type Header struct {
	Key   string
	Value string
}

// Properties are a message's AMQP basic properties. Empty strings and zeros mean not set.
type Properties struct {
	MessageID       string
	CorrelationID   string
	Timestamp       *time.Time
	Type            string
	ContentType     string
	ContentEncoding string
	AppID           string
	UserID          string
	DeliveryMode    uint8 // 1 transient, 2 persistent, 0 not set
	Priority        uint8
	Expiration      string // per-message TTL in milliseconds, as text
	ReplyTo         string
}

// Message is one message as Browse saw it.
type Message struct {
	// Position is the message's place in the queue when browsed, 0 being the head (the next
	// message a consumer would get), among the messages that were ready.
	Position int
	// DeliveryCount is how many times the queue had the message back before this read (the
	// x-delivery-count header quorum queues set; 0 for others).
	DeliveryCount int64
	// DeliveriesLeft is how many more returns the queue's delivery limit allows it after this read
	// returned it (RabbitMQ drops or dead-letters it past them); -1 when the queue has no limit.
	DeliveriesLeft int64
	// Kept is true for a message this read did not return because too few deliveries were left:
	// it was taken into Redrive's archive, then acked (see Custody).
	Kept bool
	// Offset is the message's offset in a stream queue; nil for other queues.
	Offset      *int64
	Exchange    string // the exchange it was published (or dead-lettered) to; "" is the default exchange
	RoutingKey  string
	Redelivered bool // as delivered to the browser: set by any earlier requeue, including earlier browses
	Properties  Properties
	Headers     []Header // sorted by key
	Body        []byte   // at most MaxBodyBytes; see Truncated
	Truncated   bool
	Size        int // the full body length
	// MessageID is the idempotency key: the message_id property, else the first configured header
	// present (message_id.headers), else the first configured JSON path resolving in the body.
	MessageID  string
	DeadLetter *DeadLetter // nil when the message carries no dead-letter header
	// RestoredFrom is the archive row a restore put this copy back into its queue from
	// (HeaderRestoredFrom, "archive/6"); "" for any other message.
	RestoredFrom string
	// Envelope, for a message without an id (MessageID ""), is the SHA-256 of what it carries
	// besides its body — exchange, routing key, properties, headers but the ones a broker sets on
	// each delivery — which tells apart two messages of one body (a command sent twice) where the
	// body alone cannot; a copy the broker returns has its original's. Zero for a message with an
	// id, whose id and body name it.
	Envelope [32]byte

	digest   [32]byte // the SHA-256 of the whole body, when Body was cut (digested)
	digested bool
}

// BodyDigest is the SHA-256 of the message's whole body. A browse that cut the body short
// (Truncated) hashed it whole before cutting it, so a shown message has the digest of what a
// replay would move. Only a Message made elsewhere with a cut body has none: ok is false then,
// since hashing the part it holds would name other bytes.
func (m Message) BodyDigest() (sum [32]byte, ok bool) {
	switch {
	case m.digested:
		return m.digest, true
	case m.Truncated:
		return sum, false
	}
	return sha256.Sum256(m.Body), true
}

// SetBody gives m the body whole, of which it keeps a copy of at most MaxBodyBytes: when it cuts
// the body, Truncated is set and BodyDigest is still the whole body's. Size is left as it is.
func (m *Message) SetBody(whole []byte) {
	body := whole
	if len(body) > MaxBodyBytes {
		body, m.Truncated = body[:MaxBodyBytes], true
		m.digest, m.digested = sha256.Sum256(whole), true // of the whole body (BodyDigest)
	}
	m.Body = bytes.Clone(body)
}

// BrowseResult is what Browse saw and what people need to know to read it correctly.
type BrowseResult struct {
	Vhost    string
	Queue    string
	Type     string
	Messages []Message
	// Ready and Consumers are the queue's ready messages and consumers (other than the browser)
	// when the browse started. For a stream, Ready is the management API's message count, which
	// lags by up to a statistics interval (AMQP reports 0 for streams).
	Ready     int64
	Consumers int64
	// Unacked is how many messages others (consumers, or channels that got them with basic.get)
	// held unacknowledged when the browse started: they are not shown, nor counted in Positions.
	// It comes from the management API's statistics, which lag by a sampling interval; a sample
	// taken while an earlier browse held the messages does not count, since only what is missing
	// from the live ready count can be held by someone.
	Unacked int64
	// Complete is false when the list may miss messages of the queue's head: other consumers are
	// attached, messages are held unacknowledged (Unacked), fewer messages arrived than were ready,
	// or browses from other console replicas could not be excluded. Notes say which. A replay plan
	// must not freeze an incomplete read.
	Complete bool
	// Redelivered is true when the browse requeued what it read (classic and quorum queues): those
	// messages now carry redelivered=true for their next consumer, and on a quorum queue their
	// delivery count went up by one. Stream reads are not requeued and change nothing.
	Redelivered bool
	// DeliveryLimit is the quorum queue's effective delivery limit, which each read counts
	// against; nil when none applies. DeliveryLimitFrom says where it comes from.
	DeliveryLimit     *int64
	DeliveryLimitFrom string
	// Kept is how many of the messages read were taken into Redrive's archive instead of going
	// back (Message.Kept).
	Kept int
	// Notes explain what the browse could not see or what it changed, in plain sentences.
	Notes []string
}

// MaxPeek bounds Peek, which a replay plan uses to freeze a larger selection than a page.
const MaxPeek = 100_000

// Whole is a message as an archive keeps it: everything needed to publish it again as it was —
// its properties, its headers with their AMQP types, its body — and, for people, the headers as
// JSON.
type Whole struct {
	Properties  Properties
	Exchange    string // as it was delivered from the queue (the dead-letter exchange)
	RoutingKey  string
	Headers     []byte // the amqp.Table, gob-encoded: its types (x-death's timestamps, int widths) survive
	HeadersJSON map[string]any
	Body        []byte
}

// HeaderRestoredFrom marks a message restored from the archive to its dead-letter queue with the
// archive row it came from ("archive/6"). The copy is a dead letter in the queue again, and a new
// instance of it: the mark is part of its replay locator (Message.RestoredFrom), so the ledger's
// hold of the discard that archived it — which makes a plan drop byte-identical copies of an
// archived message as copies a broker returned after a lost ack — does not apply to it, and the
// next discard archives it again and a replay publishes it like any dead letter. A replay drops
// the header with Redrive's others.
const HeaderRestoredFrom = "x-redrive-restored-from"

// PropertiesJSON is Properties as an archive and the API show them.
type PropertiesJSON struct {
	MessageID       string     `json:"message_id"`
	CorrelationID   string     `json:"correlation_id"`
	Timestamp       *time.Time `json:"timestamp"`
	Type            string     `json:"type"`
	ContentType     string     `json:"content_type"`
	ContentEncoding string     `json:"content_encoding"`
	AppID           string     `json:"app_id"`
	UserID          string     `json:"user_id"`
	DeliveryMode    uint8      `json:"delivery_mode"`
	Priority        uint8      `json:"priority"`
	Expiration      string     `json:"expiration"`
	ReplyTo         string     `json:"reply_to"`
}

// PropertiesMap is p as JSON keys (message_id, correlation_id, timestamp, …).
func PropertiesMap(p Properties) map[string]any {
	b, _ := json.Marshal(PropertiesJSON(p))
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// PropertiesFromMap is PropertiesMap's inverse (unknown keys are ignored).
func PropertiesFromMap(m map[string]any) (Properties, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return Properties{}, err
	}
	var p PropertiesJSON
	if err := json.Unmarshal(b, &p); err != nil {
		return Properties{}, fmt.Errorf("the archived properties: %w", err)
	}
	return Properties(p), nil
}
