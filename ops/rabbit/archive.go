package rabbit

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
)

func init() {
	// The values an amqp.Table holds, for gob.
	for _, v := range []any{amqp.Table{}, []any{}, time.Time{}, amqp.Decimal{}, []byte{}, int8(0), int16(0), int32(0),
		int64(0), uint8(0), uint16(0), uint32(0), float32(0), float64(0), "", true} {
		gob.Register(v)
	}
}

// Whole is the delivery as an archive keeps it.
func (d Delivery) Whole() (Whole, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(d.d.Headers); err != nil {
		return Whole{}, fmt.Errorf("encode the headers of %q: %w", d.Message.MessageID, err)
	}
	w := Whole{Properties: d.Message.Properties, Exchange: d.d.Exchange, RoutingKey: d.d.RoutingKey, Headers: buf.Bytes(),
		HeadersJSON: map[string]any{}, Body: d.d.Body}
	for k, v := range d.d.Headers {
		w.HeadersJSON[k] = jsonValue(v)
	}
	return w, nil
}

// jsonValue is an AMQP table value as JSON shows it: bytes as text, tables and arrays inside out.
func jsonValue(v any) any {
	switch x := v.(type) {
	case amqp.Table:
		m := map[string]any{}
		for k, e := range x {
			m[k] = jsonValue(e)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339)
	case amqp.Decimal:
		return fmt.Sprintf("%de-%d", x.Value, x.Scale)
	case float64:
		// JSON holds no NaN or ±Inf: json.Marshal refused the whole message, so on RabbitMQ 4 a
		// message near its queue's delivery limit failed custody on every read while the store
		// answered, and each read returned it one delivery nearer to being dropped.
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case float32:
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'g', -1, 32)
		}
	}
	return v
}

// DecodeHeaders is Whole.Headers back as a table, with their AMQP types.
func DecodeHeaders(b []byte) (amqp.Table, error) {
	t := amqp.Table{}
	if len(b) == 0 {
		return t, nil
	}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&t); err != nil {
		return nil, fmt.Errorf("decode the archived headers: %w", err)
	}
	return t, nil
}

// PublishWhole publishes an archived message to exchange with routingKey, mandatory and confirmed,
// with its own properties and headers plus extra ones: nil only when the broker confirmed it and
// routed it to a queue. Errors: ErrUnroutable (no queue took it: an ops.ErrConflict saying which
// queue or binding is missing), ops.ErrNotFound (no such exchange), ops.ErrUnavailable.
func (b *Broker) PublishWhole(ctx context.Context, vhost, exchange, routingKey string, w Whole, extra amqp.Table) error {
	headers, err := DecodeHeaders(w.Headers)
	if err != nil {
		return err
	}
	for k, v := range extra {
		headers[k] = v
	}
	return b.PublishWholeWith(ctx, vhost, exchange, routingKey, w, headers)
}

// PublishWholeWith is PublishWhole with headers in place of the archived ones (a replay rewrites
// them: x-death goes, Redrive's own are written anew). An exchange that does not exist is an
// ops.ErrNotFound saying so, asked before publishing: nothing is published then.
func (b *Broker) PublishWholeWith(ctx context.Context, vhost, exchange, routingKey string, w Whole, headers map[string]any) error {
	op := fmt.Sprintf("publish to %s %q", vhost, exchange)
	ctx, cancel := b.bound(ctx)
	defer cancel()
	if exchange != "" {
		missing, err := b.missingExchanges(ctx, vhost, []string{exchange})
		if err != nil {
			return b.fail(op, err)
		}
		if missing[exchange] {
			return b.fail(op, noExchange(vhost, exchange))
		}
	}
	ch, err := b.channel(ctx, vhost)
	if err != nil {
		return b.fail(op, err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		return b.fail(op, err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	headers = cloneTable(headers) // the caller's table stays as it was
	dropBrokerHeaders(headers)
	p := w.Properties
	if p.UserID != "" { // the broker takes user_id only from the user who publishes (HeaderOriginalUserID)
		headers[HeaderOriginalUserID] = p.UserID
	}
	msg := amqp.Publishing{Headers: headers, ContentType: p.ContentType, ContentEncoding: p.ContentEncoding,
		DeliveryMode: amqp.Persistent, Priority: p.Priority, CorrelationId: p.CorrelationID, ReplyTo: p.ReplyTo,
		Expiration: p.Expiration, MessageId: p.MessageID, Type: p.Type, AppId: p.AppID, Body: w.Body}
	if p.Timestamp != nil {
		msg.Timestamp = *p.Timestamp
	}
	conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, routingKey, true, false, msg)
	if err != nil {
		return b.fail(op, err)
	}
	ok, err := conf.WaitContext(ctx)
	if err != nil {
		return b.fail(op, err)
	}
	if !ok {
		return b.fail(op, errors.New("the broker nacked the publish"))
	}
	// A return reaches the client before the confirm of the same message.
	select {
	case r, open := <-returns:
		if open {
			return unroutable(vhost, r)
		}
	default:
	}
	return nil
}

// unroutable is a publish the broker returned (mandatory, no queue took it) as an ops.ErrConflict
// in a person's words — the queue or binding it needed is not there, which only its owner can
// change — that is still an ErrUnroutable to errors.Is.
func unroutable(vhost string, r amqp.Return) error {
	cause := fmt.Errorf("%w: exchange %q, routing key %q (%s)", ErrUnroutable, r.Exchange, r.RoutingKey, r.ReplyText)
	if r.Exchange == "" { // the default exchange routes by queue name
		return &ops.Error{Kind: ops.ErrConflict, Err: cause, Message: fmt.Sprintf(
			"queue %q does not exist in vhost %q: the broker routed the message to no queue, nothing was published", r.RoutingKey, vhost)}
	}
	return &ops.Error{Kind: ops.ErrConflict, Err: cause, Message: fmt.Sprintf(
		"exchange %q of vhost %q routes routing key %q to no queue: the broker returned the message, nothing was published",
		r.Exchange, vhost, r.RoutingKey)}
}

// restoredFrom is a message's HeaderRestoredFrom ("" when it has none).
func restoredFrom(headers amqp.Table) string {
	switch v := headers[HeaderRestoredFrom].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// RestoreToQueue publishes the archived message w (its properties, headers and body as they were)
// back into queue through the default exchange, marked HeaderRestoredFrom "archive/<archiveID>",
// mandatory and confirmed. Errors: ops.ErrConflict (still ErrUnroutable to errors.Is) when the
// queue no longer exists; ops.ErrUnavailable.
func (b *Broker) RestoreToQueue(ctx context.Context, vhost, queue string, w Whole, archiveID int64) error {
	err := b.PublishWhole(ctx, vhost, "", queue, w, amqp.Table{HeaderRestoredFrom: "archive/" + strconv.FormatInt(archiveID, 10)})
	if errors.Is(err, ErrUnroutable) {
		return &ops.Error{Kind: ops.ErrConflict, Err: err, Message: fmt.Sprintf("archived message %d cannot go back to queue %q: "+
			"it no longer exists in vhost %q of rabbitmq broker %q; recreate the queue, or restore the message to its original "+
			"destination instead (to: original)", archiveID, queue, vhost, b.Name())}
	}
	return err
}
