package search

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/rabbit"
)

func TestCompile(t *testing.T) {
	t.Run("BadExpression", func(t *testing.T) {
		_, err := Compile(Kafka, `key == "a" && nosuch > 1`)
		var ce *CompileError
		if !errors.As(err, &ce) || !errors.Is(err, ops.ErrInvalid) {
			t.Fatalf("err = %v, want a CompileError that is ErrInvalid", err)
		}
		if is := ce.Issues[0]; is.Line != 1 || is.Column != 15 || !strings.Contains(is.Message, "undeclared reference to 'nosuch'") {
			t.Fatalf("issue = %+v", is)
		}
		if !strings.Contains(err.Error(), "line 1, column 15") {
			t.Fatalf("message = %q", err)
		}
	})
	t.Run("Syntax", func(t *testing.T) {
		_, err := Compile(RabbitMQ, "body.x ==\n  )")
		var ce *CompileError
		if !errors.As(err, &ce) || ce.Issues[0].Line != 2 {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("NotBool", func(t *testing.T) {
		if _, err := Compile(Kafka, `offset + 1`); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "must give a bool") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		if _, err := Compile(Kafka, "  "); !errors.Is(err, ops.ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("RabbitVariablesAreNotKafka", func(t *testing.T) {
		if _, err := Compile(RabbitMQ, `key == "x"`); !errors.Is(err, ops.ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestMatchKafka(t *testing.T) {
	retries, part := 3, int32(2)
	rec := kafka.Record{Partition: 1, Offset: 42, Timestamp: time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC),
		Key: []byte("order-123"), Value: []byte(`{"orderId": 123, "tenant": {"id": 7}, "amount": 9.5, "items": ["a","b"]}`),
		Headers: []kafka.Header{{Key: "tenant", Value: []byte("6")}, {Key: "tenant", Value: []byte("7")}}, Size: 99,
		DeadLetter: &kafka.DeadLetter{OriginalTopic: "orders", OriginalPartition: &part, ExceptionType: "java.net.SocketTimeoutException",
			ExceptionMessage: "Read timed out", RetryCount: &retries, ConsumerGroup: "billing", MessageID: "m-1"}}
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{`key == "order-123"`, true},
		{`key.startsWith("order-") && offset == 42 && partition == 1`, true},
		{`value.orderId == 123`, true},
		{`value.orderId == 124`, false},
		{`value.tenant.id == 7 && value.amount > 9.0 && "b" in value.items`, true},
		{`headers["tenant"] == "7"`, true}, // the last value
		{`dead_letter.exception_type.endsWith("TimeoutException") && dead_letter.retry_count >= 3`, true},
		{`dead_letter.original_topic == "orders" && dead_letter.original_partition == 2 && dead_letter.consumer_group == "billing"`, true},
		{`dead_letter.message_id == "m-1" && size == 99`, true},
		{`timestamp > timestamp("2026-11-30T10:00:00Z")`, true},
		{`value.missing == 1`, false}, // fails on this record: no match
		{`dead_letter.exception_message.lowerAscii().contains("timed out")`, true},
	} {
		f, err := Compile(Kafka, tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		got, err := f.MatchKafka(context.Background(), rec)
		if err != nil || got != tc.want {
			t.Errorf("%s = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
	t.Run("TextValue", func(t *testing.T) {
		f, _ := Compile(Kafka, `value == "plain text" && dead_letter.exception_type == ""`)
		if ok, err := f.MatchKafka(context.Background(), kafka.Record{Value: []byte("plain text")}); !ok || err != nil {
			t.Fatalf("= %v, %v", ok, err)
		}
	})
}

func TestMatchRabbit(t *testing.T) {
	m := rabbit.Message{Exchange: "orders-x", RoutingKey: "orders.created", MessageID: "ord-9",
		Properties: rabbit.Properties{MessageID: "ord-9", ContentType: "application/json", Priority: 3},
		Headers:    []rabbit.Header{{Key: "tenant", Value: "7"}}, Body: []byte(`{"orderId":123}`),
		DeadLetter: &rabbit.DeadLetter{Reason: "rejected", Count: 2, OriginalQueue: "orders", OriginalRoutingKeys: []string{"orders.created"},
			ExceptionMessage: "boom"}}
	for _, expr := range []string{`body.orderId == 123`, `headers["tenant"] == "7"`, `routing_key == "orders.created" && exchange == "orders-x"`,
		`properties.message_id.startsWith("ord-") && properties.priority == 3`,
		`dead_letter.reason == "rejected" && dead_letter.count == 2 && "orders.created" in dead_letter.original_routing_keys`,
		`dead_letter.original_queue == "orders" && dead_letter.exception_message == "boom"`} {
		f, err := Compile(RabbitMQ, expr)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := f.MatchRabbit(context.Background(), m); !ok || err != nil {
			t.Errorf("%s = %v, %v", expr, ok, err)
		}
	}
}

func TestCostLimit(t *testing.T) {
	f, err := Compile(Kafka, costly)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.MatchKafka(context.Background(), kafka.Record{})
	if !errors.Is(err, ErrCostLimit) || !errors.Is(err, ops.ErrInvalid) || strings.HasPrefix(ops.Message(err), "invalid input") {
		t.Fatalf("err = %v (a person reads %q), want the cost limit in words", err, ops.Message(err))
	}
}

// costly is an expression of about 10^6 operations on any record.
const costly = `[0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].map(b, [0,1,2,3,4,5,6,7,8,9].map(c, ` +
	`[0,1,2,3,4,5,6,7,8,9].map(d, [0,1,2,3,4,5,6,7,8,9].map(e, [0,1,2,3,4,5,6,7,8,9].filter(f, a+b+c+d+e+f == offset)))))).size() > 0`

// The resolution variable reads the lookup the caller passes (the store's marks): open without
// one; a lookup that fails fails the expression on the record (no match, counted), whichever
// way the expression compares, so a store that cannot say never selects resolved records.
func TestResolutionVariable(t *testing.T) {
	ctx := context.Background()
	open, err := Compile(Kafka, `resolution == "open"`)
	if err != nil {
		t.Fatal(err)
	}
	notOpen, _ := Compile(Kafka, `resolution != "open"`)
	rec := func(p int32, o int64) kafka.Record { return kafka.Record{Partition: p, Offset: o} }
	if ok, err := open.MatchKafka(ctx, rec(0, 0)); !ok || err != nil {
		t.Fatalf("without a lookup every record is open: %v %v", ok, err)
	}
	marks := map[[2]int64]string{{0, 1}: "resolved", {1, 1}: "replayed"}
	calls := 0
	lookup := func(p int32, o int64) (string, error) {
		calls++
		if s, ok := marks[[2]int64{int64(p), o}]; ok {
			return s, nil
		}
		return "open", nil
	}
	withOpen, withNot := open.WithResolutions(lookup), notOpen.WithResolutions(lookup)
	for _, tc := range []struct {
		p       int32
		o       int64
		isOpen  bool
		comment string
	}{{0, 0, true, "unmarked"}, {0, 1, false, "resolved"}, {1, 1, false, "replayed"}, {1, 0, true, "unmarked"}} {
		a, err1 := withOpen.MatchKafka(ctx, rec(tc.p, tc.o))
		b, err2 := withNot.MatchKafka(ctx, rec(tc.p, tc.o))
		if err1 != nil || err2 != nil || a != tc.isOpen || b == tc.isOpen {
			t.Errorf("%s %d:%d: open %v, not open %v (%v %v)", tc.comment, tc.p, tc.o, a, b, err1, err2)
		}
	}
	if ok, _ := open.MatchKafka(ctx, rec(0, 1)); !ok {
		t.Fatal("WithResolutions changed the shared filter")
	}
	failing := func(int32, int64) (string, error) { return "", errors.New("store down") }
	for _, f := range []*Filter{open.WithResolutions(failing), notOpen.WithResolutions(failing)} {
		r := kafka.Record{}
		m, evalErr, err := f.eval(ctx, &kafkaVars{plain: &r, seen: &r})
		if m || evalErr == nil || err != nil {
			t.Fatalf("%s with a failing lookup: match %v, eval error %v, err %v", f.Text(), m, evalErr, err)
		}
	}
	// A filter that never names resolution never asks.
	calls = 0
	keyOnly, _ := Compile(Kafka, `key == "x"`)
	_, _ = keyOnly.WithResolutions(lookup).MatchKafka(ctx, rec(0, 1))
	if calls != 0 {
		t.Fatalf("a filter on the key asked the lookup %d times", calls)
	}
}

// InState keeps the records in one resolution state besides the expression (a scan's ?state=):
// "all" or "" is the filter itself, a shared filter is unchanged, and a lookup that fails is no
// match with the reason counted, as the resolution variable's is.
func TestInState(t *testing.T) {
	ctx := context.Background()
	f, err := Compile(Kafka, `offset > 0`)
	if err != nil {
		t.Fatal(err)
	}
	if f.InState("all") != f || f.InState("") != f {
		t.Fatal(`InState("all") or InState("") changed the filter`)
	}
	marks := map[int64]string{1: "resolved", 3: "replayed"}
	lookup := func(_ int32, o int64) (string, error) {
		if s, ok := marks[o]; ok {
			return s, nil
		}
		return "open", nil
	}
	rec := func(o int64) kafka.Record { return kafka.Record{Offset: o} }
	for state, want := range map[string][]int64{"open": {2}, "resolved": {1}, "replayed": {3}, "ignored": nil} {
		g := f.WithResolutions(lookup).InState(state)
		var got []int64
		for o := range int64(4) {
			if ok, err := g.MatchKafka(ctx, rec(o)); err != nil {
				t.Fatal(err)
			} else if ok {
				got = append(got, o)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("state %s: matched offsets %v, want %v", state, got, want)
		}
	}
	if ok, _ := f.MatchKafka(ctx, rec(1)); !ok {
		t.Fatal("InState changed the shared filter")
	}
	if ok, _ := f.InState("open").MatchKafka(ctx, rec(1)); !ok {
		t.Fatal("without a lookup every record is open")
	}
	failing := f.WithResolutions(func(int32, int64) (string, error) { return "", errors.New("store down") }).InState("open")
	r := rec(2)
	if m, evalErr, err := failing.eval(ctx, &kafkaVars{plain: &r, seen: &r}); m || evalErr == nil || err != nil {
		t.Fatalf("a failing lookup: match %v, eval error %v, err %v; want no match with the reason", m, evalErr, err)
	}
}
