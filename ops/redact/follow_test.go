package redact

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/replay"
)

// The secrets of these tests: a card number in the payload, a three-digit PIN in the payload,
// and an exception message whose header is masked by name.
const (
	card    = "4000000000000002"
	pin     = "737"
	message = "payment refused for customer Zoë Quist"
	trace   = "com.acme.PaymentException: " + message + "\n\tat com.acme.Pay.charge(Pay.java:42)"
)

func followRules(t *testing.T) *Rules {
	t.Helper()
	r, err := New([]string{"kafka_dlt-exception-message", "x-exception-message"}, []string{"$.card.number", "$.pin"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const followBody = `{"order":"o-7370","card":{"number":"` + card + `"},"pin":"` + pin + `"}`

// TestMaskFollowsTheContent: whatever repeats a hidden value — whole, a short secret as a word,
// a value cut inside it — is hidden in every derived field: other headers, the decoded
// dead-letter fields, an archived message's headers, an outbox event's last_error, an error
// group's sample. Values that only look alike stay.
func TestMaskFollowsTheContent(t *testing.T) {
	r := followRules(t)
	for _, tc := range []struct {
		name, derived string
		hidden        bool
	}{
		{"Whole", "card " + card + " declined", true},
		{"ShortSecretAsWord", "pin " + pin + " refused", true},
		{"ShortSecretQuoted", `{"pin":"` + pin + `"}`, true},
		{"ShortSecretInsideAWord", "order o-7370 failed", false},
		{"StackTraceRepeatsTheMessage", trace, true},
		{"StackTraceCutInsideTheMessage", "com.acme.PaymentException: payment refused for cust", true},
		{"ClippedWithEllipsis", "com.acme.PaymentException: payment refused for customer Zo…", true},
		{"CutCard", "declined: 40000000", true},
		{"Unrelated", "java.net.SocketTimeoutException: read timed out", false},
		{"TooShortATailToTell", "declined: 4", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := kafka.Record{Value: []byte(followBody), Headers: []kafka.Header{
				{Key: "kafka_dlt-exception-message", Value: []byte(message)},
				{Key: "kafka_dlt-exception-stacktrace", Value: []byte(tc.derived)}},
				DeadLetter: &kafka.DeadLetter{ExceptionMessage: message, Stacktrace: tc.derived}}
			got, _ := r.Record(rec)
			shown := string(got.Headers[1].Value)
			if hidden := shown == Redacted; hidden != tc.hidden || (got.DeadLetter.Stacktrace == Redacted) != tc.hidden {
				t.Errorf("Kafka: header %q, stacktrace %q; hidden should be %v", shown, got.DeadLetter.Stacktrace, tc.hidden)
			}
			m := r.Message(rabbit.Message{Body: []byte(followBody), Headers: []rabbit.Header{
				{Key: "x-exception-message", Value: message}, {Key: "x-exception-stacktrace", Value: tc.derived}},
				DeadLetter: &rabbit.DeadLetter{ExceptionMessage: message, Stacktrace: tc.derived}})
			if hidden := m.Headers[1].Value == Redacted; hidden != tc.hidden || (m.DeadLetter.Stacktrace == Redacted) != tc.hidden {
				t.Errorf("RabbitMQ: header %q, stacktrace %q; hidden should be %v", m.Headers[1].Value, m.DeadLetter.Stacktrace, tc.hidden)
			}
			a, _ := r.Archived(replay.Archived{Body: []byte(followBody),
				Headers: map[string]any{"x-exception-message": message, "x-exception-stacktrace": tc.derived}})
			if hidden := a.Headers["x-exception-stacktrace"] == Redacted; hidden != tc.hidden {
				t.Errorf("archive: %q; hidden should be %v", a.Headers["x-exception-stacktrace"], tc.hidden)
			}
			// An outbox event has no headers: last_error follows the payload alone.
			if strings.Contains(tc.derived, card) || strings.Contains(tc.derived, pin) {
				last := tc.derived
				e, _ := r.OutboxEvent(outbox.Event{Payload: followBody, LastError: &last})
				if hidden := *e.LastError == Redacted; hidden != tc.hidden {
					t.Errorf("outbox last_error %q; hidden should be %v", *e.LastError, tc.hidden)
				}
			}
		})
	}
}

func TestMaskedOutboxEvent(t *testing.T) {
	r := followRules(t)
	last := "com.acme.PaymentException: card " + card + " declined"
	e, masked := r.OutboxEvent(outbox.Event{Payload: followBody, LastError: &last})
	if !masked || strings.Contains(e.Payload, card) || *e.LastError != Redacted {
		t.Fatalf("payload %s, last_error %q", e.Payload, *e.LastError)
	}
	other := "timeout after 30s"
	if e, _ := r.OutboxEvent(outbox.Event{Payload: followBody, LastError: &other}); *e.LastError != other {
		t.Errorf("an error quoting nothing hidden: %q", *e.LastError)
	}
	// Read without its payload (a list), nothing tells what the payload hides: hidden whole.
	if e, _ := r.OutboxEvent(outbox.Event{LastError: &other}); *e.LastError != Redacted {
		t.Errorf("last_error without its payload: %q", *e.LastError)
	}
	none, _ := New([]string{"authorization"}, nil)
	if e, _ := none.OutboxEvent(outbox.Event{LastError: &last}); *e.LastError != last || none.MasksPayloads() {
		t.Errorf("header rules alone mask no payload: %q", *e.LastError)
	}
}

// TestErrorSampleFollowsItsRecord: an error group's sample is masked as its record masks the
// exception message: quoting the payload's card, or the message header masked by name.
func TestErrorSampleFollowsItsRecord(t *testing.T) {
	paths, _ := New(nil, []string{"$.card.number"})
	quoting := "card " + card + " declined"
	rec := kafka.Record{Value: []byte(followBody), DeadLetter: &kafka.DeadLetter{ExceptionMessage: quoting}}
	g := kafka.ErrorGroup{ExceptionType: "com.acme.PaymentException", SampleMessage: quoting, Sample: &rec}
	if got := paths.ErrorSample(g); got != Redacted {
		t.Errorf("a sample quoting the card: %q", got)
	}
	if got := paths.ErrorGroup(g); got.SampleMessage != Redacted || got.Sample != nil || got.ExceptionType != g.ExceptionType {
		t.Errorf("the group: %+v", got)
	}
	clear := kafka.Record{Value: []byte(followBody), DeadLetter: &kafka.DeadLetter{ExceptionMessage: "timeout"}}
	if got := paths.ErrorSample(kafka.ErrorGroup{SampleMessage: "timeout", Sample: &clear}); got != "timeout" {
		t.Errorf("a sample quoting nothing hidden: %q", got)
	}
	if got := paths.ErrorSample(kafka.ErrorGroup{SampleMessage: "timeout"}); got != Redacted {
		t.Errorf("a sample without its record, under JSON paths: %q", got)
	}
	byName := followRules(t)
	if got := byName.ErrorSample(kafka.ErrorGroup{SampleMessage: "timeout", Sample: &clear}); got != Redacted {
		t.Errorf("the message header masked by name: %q", got)
	}
	if got := (*Rules)(nil).ErrorSample(g); got != quoting {
		t.Errorf("no rules: %q", got)
	}
}

// TestMaskingRevealsNoLength: a masked record's and message's sizes are those of what they show,
// whatever the length of what was hidden.
func TestMaskingRevealsNoLength(t *testing.T) {
	r := followRules(t)
	sizes := map[int]bool{}
	bodies := map[int]bool{}
	for _, n := range []int{1, 16, 4000} {
		body := `{"card":{"number":"` + strings.Repeat("4", n) + `"},"pin":"1"}`
		got, _ := r.Record(kafka.Record{Value: []byte(body), OriginalSize: len(body), Size: len(body)})
		sizes[got.Size], sizes[got.OriginalSize] = true, true
		m := r.Message(rabbit.Message{Body: []byte(body), Size: len(body)})
		bodies[m.Size] = true
	}
	if len(sizes) != 1 || len(bodies) != 1 {
		t.Errorf("sizes differ with the hidden value's length: records %v, messages %v", sizes, bodies)
	}
	cut, _ := r.Record(kafka.Record{Value: []byte(`{"card":`), Truncated: true, OriginalSize: 1 << 20, Size: 1 << 20})
	if string(cut.Value) != Redacted || cut.Truncated || cut.OriginalSize != len(Redacted) || cut.Size != len(Redacted) {
		t.Errorf("a cut value masked whole: %q truncated %v original %d size %d", cut.Value, cut.Truncated, cut.OriginalSize, cut.Size)
	}
}
