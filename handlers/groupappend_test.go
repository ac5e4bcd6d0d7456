package handlers

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
)

// marshalGroup is the all-groups answer's definition of one group: json.Marshal(toGroupJSON(g)).
func marshalGroup(t testing.TB, g lag.Group) ([]byte, error) {
	t.Helper()
	return json.Marshal(toGroupJSON(g))
}

// checkAppendIsMarshal fails t unless appendGroupJSON writes g as marshalGroup does after a prefix
// it must leave alone, or declines (ok false, the prefix as it was) exactly where json.Marshal
// fails.
func checkAppendIsMarshal(t testing.TB, g lag.Group) {
	t.Helper()
	want, merr := marshalGroup(t, g)
	prefix := []byte(`[{"earlier":1},`)
	got, ok := appendGroupJSON(bytes.Clone(prefix), g)
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("the bytes before the group were changed: %q", got)
	}
	got = got[len(prefix):]
	switch {
	case merr != nil && ok:
		t.Fatalf("appended %q where json.Marshal fails (%v)", got, merr)
	case merr != nil:
		if len(got) != 0 {
			t.Fatalf("declined, but left %q behind", got)
		}
	case !ok:
		t.Fatalf("declined a group json.Marshal encodes: %s", want)
	case !bytes.Equal(got, want):
		t.Fatalf("appended:\n%s\njson.Marshal:\n%s", got, want)
	}
}

// Strings that take each of encoding/json's escaping paths.
var hostileStrings = []string{"", "orders", "a\x00b", "\xff", "<script>&</script>", "\u2028\u2029", `"\`, "é→✓",
	"\b\f\n\r\t\x1f\x7f", "\xe2\x80", "\ufffd", "tab\tand 😀", strings.Repeat("x", 300)}

// Floats at encoding/json's format boundaries (1e-6, 1e21), subnormal, negative zero.
var edgeFloats = []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789.125, 5e-324,
	math.MaxFloat64, -1e-9, 2.5e-8, 1.0 / 3}

func randomGroup(r *rand.Rand) lag.Group {
	str := func() string {
		if r.IntN(4) == 0 {
			b := make([]byte, r.IntN(12))
			for i := range b {
				b[i] = byte(r.UintN(256))
			}
			return string(b)
		}
		return hostileStrings[r.IntN(len(hostileStrings))]
	}
	float := func() float64 {
		if r.IntN(2) == 0 {
			return edgeFloats[r.IntN(len(edgeFloats))]
		}
		return math.Float64frombits(r.Uint64()) // NaN and ±Inf now and then: json.Marshal refuses them
	}
	dur := func() time.Duration {
		switch r.IntN(4) {
		case 0:
			return -1
		case 1:
			return 0
		default:
			return time.Duration(r.Int64N(math.MaxInt64))
		}
	}
	codes := []lag.StatusCode{lag.StatusOK, lag.StatusWarn, lag.StatusStall, lag.StatusStop, lag.StatusEmpty, lag.StatusDead, lag.StatusCode(str())}
	g := lag.Group{Group: kafkamodel.Group{Name: str(), Type: []string{"", kafkamodel.GroupClassic, kafkamodel.GroupConsumer, kafkamodel.GroupShare}[r.IntN(4)],
		State: str(), Protocol: str(), Members: r.IntN(1000) - 1, Epoch: r.Int32(), AssignmentEpoch: -r.Int32(),
		DeliveryLimit: r.IntN(3) - 1, DeliveryLimitFrom: []string{"", "group", "broker", str()}[r.IntN(4)],
		TotalLag: r.Int64() - r.Int64(), MaxTimeLag: dur()}}
	if r.IntN(4) == 0 {
		g.Error = str()
	}
	g.Status = lag.Status{Code: codes[r.IntN(len(codes))], Reason: str()}
	switch r.IntN(5) {
	case 0:
	case 1:
		g.Status.Since = time.Date(10000+r.IntN(100), 1, 1, 0, 0, 0, 0, time.UTC) // json.Marshal refuses the year
	default:
		g.Status.Since = time.Unix(r.Int64N(1<<35), r.Int64N(1e9)).In(time.FixedZone("UTC+5:30", 5*3600+1800))
	}
	if g.RateKnown = r.IntN(3) > 0; g.RateKnown {
		g.Rate, g.CatchUp = float(), dur()
	}
	g.Partitions = map[string]lag.Status{}
	for range r.IntN(4) {
		t := kafkamodel.TopicLag{Topic: str(), Lag: r.Int64(), MaxTimeLag: dur()}
		for p := range r.IntN(5) {
			t.Partitions = append(t.Partitions, kafkamodel.PartitionLag{Partition: int32(p), Committed: r.Int64N(1<<40) - 1, Start: r.Int64() - r.Int64(),
				End: r.Int64(), Lag: r.Int64N(1000) - 1, TimeLag: dur(), Member: str(), ShareStart: r.Int64N(100) - 1})
			if r.IntN(2) == 0 {
				g.Partitions[lag.PartitionKey(t.Topic, int32(p))] = lag.Status{Code: codes[r.IntN(len(codes))], Reason: str()}
			}
		}
		g.Topics = append(g.Topics, t)
	}
	return g
}

// The hand-written encoding of a group is json.Marshal's, byte for byte, on 20,000 random groups
// of every type, with hostile strings, floats at encoding/json's format boundaries and beyond
// (NaN, ±Inf), times in other zones and out of its range; where json.Marshal refuses a group,
// appendGroupJSON declines it, and encodeGroups then gets json.Marshal's error.
func TestAppendGroupIsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 4))
	declined := 0
	for range 20_000 {
		g := randomGroup(r)
		checkAppendIsMarshal(t, g)
		if _, err := marshalGroup(t, g); err != nil {
			declined++
		}
	}
	if declined == 0 || declined > 15_000 {
		t.Fatalf("json.Marshal refused %d of 20,000 groups; the generator should make some, not most, of them refusable", declined)
	}
	for _, f := range edgeFloats {
		got, _ := appendJSONFloat(nil, f)
		if want, _ := json.Marshal(f); !bytes.Equal(got, want) {
			t.Errorf("float %v: %s, json.Marshal %s", f, got, want)
		}
	}
}

// A field added to the groups' JSON (groupJSON, topicLagJSON, partitionLagJSON) must be added to
// appendGroupJSON too: a group with every field set shows every field's name in what it writes.
func TestAppendGroupKnowsEveryField(t *testing.T) {
	full := lag.Group{Group: kafkamodel.Group{Name: "g", Type: kafkamodel.GroupShare, State: "Stable", Protocol: "share", Members: 2,
		Epoch: 3, AssignmentEpoch: 3, DeliveryLimit: 5, DeliveryLimitFrom: "group", TotalLag: 7, MaxTimeLag: time.Second, Error: "e",
		Topics: []kafkamodel.TopicLag{{Topic: "t", Lag: 7, MaxTimeLag: time.Second,
			Partitions: []kafkamodel.PartitionLag{{Partition: 0, Start: 0, End: 9, Lag: 7, TimeLag: time.Second, Member: "m", ShareStart: 2, LagAtMost: true}}}}},
		Status:     lag.Status{Code: lag.StatusWarn, Reason: "r", Since: time.Unix(1, 0)},
		Partitions: map[string]lag.Status{"t/0": {Code: lag.StatusWarn, Reason: "r"}}, RateKnown: true, Rate: 1, CatchUp: time.Second}
	classic := full
	classic.Type = kafkamodel.GroupClassic
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				seen[k] = true
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for _, g := range []lag.Group{full, classic} {
		checkAppendIsMarshal(t, g)
		b, _ := appendGroupJSON(nil, g)
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		walk(v)
	}
	var missing []string
	for _, typ := range []reflect.Type{reflect.TypeFor[groupJSON](), reflect.TypeFor[topicLagJSON](), reflect.TypeFor[partitionLagJSON]()} {
		for f := range typ.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" && !seen[name] {
				missing = append(missing, typ.Name()+"."+name)
			}
		}
	}
	if slices.Sort(missing); len(missing) > 0 {
		t.Fatalf("appendGroupJSON never writes %v: add them to it and to the group with every field set here", missing)
	}
}

// FuzzAppendGroupIsMarshal: whatever strings and numbers a group carries, appendGroupJSON writes
// json.Marshal's bytes or declines where json.Marshal fails.
func FuzzAppendGroupIsMarshal(f *testing.F) {
	f.Add("orders", "<b>&\u2028", "a\x00\xff", 1.5, int64(-1), int64(1_500_000_000), uint8(3))
	f.Add("", "", "", math.NaN(), int64(0), int64(0), uint8(0))
	f.Add("g", "r", "t", 1e21, int64(math.MaxInt64), int64(-1), uint8(255))
	f.Fuzz(func(t *testing.T, name, reason, topic string, rate float64, nanos, since int64, shape uint8) {
		g := lag.Group{Group: kafkamodel.Group{Name: name, Type: []string{"", kafkamodel.GroupClassic, kafkamodel.GroupConsumer, kafkamodel.GroupShare}[shape%4],
			State: reason, Protocol: topic, Members: int(shape), DeliveryLimit: int(shape) - 100, DeliveryLimitFrom: name,
			TotalLag: nanos, MaxTimeLag: time.Duration(nanos), Error: reason,
			Topics: []kafkamodel.TopicLag{{Topic: topic, Lag: since, MaxTimeLag: time.Duration(since),
				Partitions: []kafkamodel.PartitionLag{{Partition: int32(shape), Committed: nanos, End: since, TimeLag: time.Duration(-nanos), Member: reason}}}}},
			Status:    lag.Status{Code: lag.StatusCode(name), Reason: reason, Since: time.Unix(0, since)},
			RateKnown: shape&4 != 0, Rate: rate, CatchUp: time.Duration(nanos)}
		if shape&8 != 0 {
			g.Partitions = map[string]lag.Status{lag.PartitionKey(topic, int32(shape)): {Code: lag.StatusCode(topic), Reason: name}}
		}
		checkAppendIsMarshal(t, g)
	})
}
