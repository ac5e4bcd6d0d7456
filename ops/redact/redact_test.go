package redact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/kafka"
)

var testPaths = []string{"$.card.number", "$.email", "$.items[*].iban", "$.matrix[1]", "$.*.secret", "$['odd.key']"}

func testRules(t testing.TB) *Rules {
	t.Helper()
	r, err := New([]string{"Authorization", " x-card-number "}, testPaths)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRedactHeader(t *testing.T) {
	r := testRules(t)
	for name, want := range map[string]bool{"authorization": true, "AUTHORIZATION": true, "X-Card-Number": true,
		"x-card": false, "": false, "content-type": false} {
		if got := r.Header(name); got != want {
			t.Errorf("Header(%q) = %v, want %v", name, got, want)
		}
	}
	var none *Rules
	if none.Header("authorization") {
		t.Error("nil rules mask nothing")
	}
}

func TestRedactJSON(t *testing.T) {
	r := testRules(t)
	const m = `"` + Redacted + `"`
	cases := []struct {
		name, in, want string // want "" means unchanged
	}{
		{"Nested", `{"id":7,"card":{"number":"4111 1111 1111 1111","exp":"12/29"},"email":"a@b.c"}`,
			`{"id":7,"card":{"number":` + m + `,"exp":"12/29"},"email":` + m + `}`},
		{"WholeSubtree", `{"email":{"home":"a@b","work":["c@d"]}}`, `{"email":` + m + `}`},
		{"ArrayWildcard", `{"items":[{"iban":"DE44","qty":1},{"qty":2},{"iban":null}]}`,
			`{"items":[{"iban":` + m + `,"qty":1},{"qty":2},{"iban":` + m + `}]}`},
		{"ArrayIndex", `{"matrix":[0,[1,2],3]}`, `{"matrix":[0,` + m + `,3]}`},
		{"AnyKey", `{"a":{"secret":1},"b":{"secret":{"x":2},"public":3},"secret":4}`,
			`{"a":{"secret":` + m + `},"b":{"secret":` + m + `,"public":3},"secret":4}`},
		{"QuotedKey", `{"odd.key":"x","odd":{"key":"y"}}`, `{"odd.key":` + m + `,"odd":{"key":"y"}}`},
		{"DuplicateKeys", `{"email":"first","email":"second"}`, `{"email":` + m + `,"email":` + m + `}`},
		{"KeepsOrderNumbersAndText", `{"z":1.50e3,"email":"x","a":"<b>&amp;</b> ü","n":12345678901234567890}`,
			`{"z":1.50e3,"email":` + m + `,"a":"<b>&amp;</b> ü","n":12345678901234567890}`},
		{"NoMatch", `{"card":"no number here","items":[1,2]}`, ""},
		{"WrongShape", `{"card":[{"number":1}],"items":{"iban":"x"}}`, ""},
		{"TopLevelArray", `[{"email":"x"}]`, ""},
		{"Scalar", `"email"`, ""},
		{"NotJSON", `email=a@b.c`, ""},
		{"Truncated", `{"email":"a@b.c","card":{"number":"41`, ""},
		{"TwoDocuments", `{"email":"x"} {"email":"y"}`, ""},
		{"Empty", ``, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := r.JSON([]byte(tc.in))
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if string(got) != want || changed != (tc.want != "") {
				t.Fatalf("JSON(%s)\n got %s (changed %v)\nwant %s", tc.in, got, changed, want)
			}
		})
	}
}

func TestRedactFor(t *testing.T) {
	body := []byte(`{"email":"a@b.c"}`)
	log := &memAudit{}
	r := testRules(t).Audited(log)
	ask := func(role string, reveal bool) (*Rules, error) {
		parsed, err := access.ParseRole(role)
		if err != nil {
			t.Fatal(err)
		}
		actor := access.Actor{Name: role + "-1", Role: parsed}
		return r.For(context.Background(), actor, reveal, audit.Entry{Actor: actor.Name, Role: role, Target: "outbox/orders/event/1"})
	}
	for _, role := range []string{"viewer", "operator", "admin"} {
		red, err := ask(role, false)
		if out, _ := red.JSON(body); err != nil || bytes.Contains(out, []byte("a@b.c")) {
			t.Errorf("%s sees the email without revealing it (%v)", role, err)
		}
	}
	if _, err := ask("operator", true); !errors.Is(err, ops.ErrForbidden) {
		t.Errorf("an operator's reveal: %v, want ErrForbidden", err)
	}
	red, err := ask("admin", true)
	if out, changed := red.JSON(body); err != nil || changed || !bytes.Equal(out, body) {
		t.Errorf("an admin's reveal must show the payload as it is (%v)", err)
	}
	if len(log.entries) != 1 || log.entries[0].Action != "content.reveal" || log.entries[0].Actor != "admin-1" ||
		log.entries[0].Target != "outbox/orders/event/1" || log.entries[0].Count == nil || *log.entries[0].Count != 1 {
		t.Errorf("audit: %+v", log.entries)
	}
	// No audit row, no reveal: the content stays masked and the reader is told why.
	log.fail = errors.New("store down")
	if red, err := ask("admin", true); !errors.Is(err, ops.ErrUnavailable) || red != nil {
		t.Errorf("a reveal the log cannot record: %v, %v; want ErrUnavailable", red, err)
	}
	if red, err := (*Rules)(nil).For(context.Background(), access.Actor{}, true, audit.Entry{}); red != nil || err != nil {
		t.Errorf("no rules: %v %v; want nothing masked, no refusal", red, err)
	}
}

type memAudit struct {
	entries []audit.Entry
	fail    error
}

func (m *memAudit) RecordAudit(_ context.Context, e audit.Entry) error {
	if m.fail != nil {
		return m.fail
	}
	m.entries = append(m.entries, e)
	return nil
}

func TestParsePath(t *testing.T) {
	good := map[string][]pathSeg{
		"$.a":           {{kind: segKey, key: "a"}},
		"$.a.b":         {{kind: segKey, key: "a"}, {kind: segKey, key: "b"}},
		"$.a[*].b":      {{kind: segKey, key: "a"}, {kind: segAnyIndex}, {kind: segKey, key: "b"}},
		"$[2]":          {{kind: segIndex, index: 2}},
		"$.*":           {{kind: segAnyKey}},
		`$['a.b']["c"]`: {{kind: segKey, key: "a.b"}, {kind: segKey, key: "c"}},
	}
	for p, want := range good {
		got, err := parsePath(p)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parsePath(%q) = %+v, %v; want %+v", p, got, err, want)
		}
	}
	for _, p := range []string{"", "$", "a.b", "$.", "$..a", "$[", "$[x]", "$[-1]", "$[+1]", "$['a", "$a"} {
		if _, err := parsePath(p); err == nil {
			t.Errorf("parsePath(%q) accepted", p)
		} else if !strings.Contains(err.Error(), strconv.Quote(p)) {
			t.Errorf("error %q does not name the path", err)
		}
	}
	if _, err := New(nil, []string{"$.ok", "nope"}); err == nil {
		t.Error("New accepted a bad path")
	}
}

// FuzzRedactJSON checks, for any input, that JSON never fails open: the output of a JSON document
// is the same document with exactly the configured paths masked, and anything else comes back
// untouched.
func FuzzRedactJSON(f *testing.F) {
	for _, s := range []string{`{"card":{"number":"4111"},"email":"x"}`, `{"items":[{"iban":1},{"iban":[2]}]}`,
		`{"matrix":[[1],[2],[3]]}`, `{"a":{"secret":"s"},"odd.key":1}`, `{"email":"a","email":"b"}`, `[1,"x",null]`,
		`{"email":"\ud800\u00e9\"<>"}`, `{"card":{"number":{"deep":[1,{"x":2}]}}}`, `nope`, `{"email":`, `1e400`} {
		f.Add([]byte(s))
	}
	r := testRules(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, changed := r.JSON(in)
		if !changed {
			if !bytes.Equal(out, in) {
				t.Fatalf("unchanged but different: %q → %q", in, out)
			}
		}
		if !json.Valid(in) {
			if changed {
				t.Fatalf("changed invalid JSON %q", in)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q from %q", out, in)
		}
		want := reference(r, decodeAny(t, in))
		got := decodeAny(t, out)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("redacting %q\n got %#v\nwant %#v", in, got, want)
		}
		if again, _ := r.JSON(out); !bytes.Equal(again, out) && changed {
			t.Fatalf("not idempotent: %q → %q", out, again)
		}
	})
}

func decodeAny(t *testing.T, b []byte) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

// reference masks a decoded document the obvious way, for comparison.
func reference(r *Rules, v any) any {
	var walk func(v any, ms []match) any
	walk = func(v any, ms []match) any {
		for _, m := range ms {
			if m.pos == len(r.paths[m.path]) {
				return Redacted
			}
		}
		step := func(ok func(pathSeg) bool) []match {
			var next []match
			for _, m := range ms {
				if s := r.paths[m.path][m.pos]; ok(s) {
					next = append(next, match{m.path, m.pos + 1})
				}
			}
			return next
		}
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				t[k] = walk(c, step(func(s pathSeg) bool { return s.kind == segAnyKey || (s.kind == segKey && s.key == k) }))
			}
		case []any:
			for i, c := range t {
				t[i] = walk(c, step(func(s pathSeg) bool { return s.kind == segAnyIndex || (s.kind == segIndex && s.index == i) }))
			}
		}
		return v
	}
	var start []match
	for i := range r.paths {
		start = append(start, match{path: i})
	}
	return walk(v, start)
}

func TestRedactKafkaRecord(t *testing.T) {
	r := testRules(t)
	rec := kafka.Record{Value: []byte(`{"email":"a@b.c","id":1}`),
		Headers: []kafka.Header{{Key: "Authorization", Value: []byte("Bearer x")}, {Key: "traceId", Value: []byte("t1")}}}
	got, redacted := r.Record(rec)
	if !redacted || bytes.Contains(got.Value, []byte("a@b.c")) || !bytes.Contains(got.Value, []byte(`"id":1`)) ||
		string(got.Headers[0].Value) != Redacted || string(got.Headers[1].Value) != "t1" {
		t.Fatalf("redacted record: %q %+v", got.Value, got.Headers)
	}
	if string(rec.Headers[0].Value) != "Bearer x" {
		t.Fatal("the original record's headers were changed")
	}
	rec.Truncated = true
	if got, _ := r.Record(rec); string(got.Value) != Redacted {
		t.Fatalf("a cut value must be masked whole: %q", got.Value)
	}
	if got, redacted := (*Rules)(nil).Record(rec); redacted || !bytes.Equal(got.Value, rec.Value) {
		t.Fatal("nil rules changed the record")
	}
}

// TestRedactRecordKeepsWhatScansReadFirst: a filter scan reads key, partition, offset and
// timestamp from the record as fetched, before the view (search.Query.View), so the redaction must
// leave them as they are — even a key that quotes a masked header or JSON field. A rule that
// masks one of them has to change the scan too. The size is the masked record's (masking reveals
// no length), and a scan under a view reads it from the view.
func TestRedactRecordKeepsWhatScansReadFirst(t *testing.T) {
	r := testRules(t)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := kafka.Record{Partition: 3, Offset: 42, Timestamp: at, Size: 77, Key: []byte("Bearer x"),
		Value:      []byte(`{"email":"Bearer x","id":1}`),
		Headers:    []kafka.Header{{Key: "Authorization", Value: []byte("Bearer x")}},
		DeadLetter: &kafka.DeadLetter{ExceptionMessage: "Bearer x"}}
	got, redacted := r.Record(rec)
	if !redacted {
		t.Fatal("nothing was masked")
	}
	if string(got.Key) != "Bearer x" || got.Partition != 3 || got.Offset != 42 || !got.Timestamp.Equal(at) {
		t.Fatalf("the redaction changed what a scan reads before it: key %q partition %d offset %d timestamp %v",
			got.Key, got.Partition, got.Offset, got.Timestamp)
	}
	want := len(got.Key) + len(got.Value) + len("Authorization") + len(Redacted)
	if got.Size != want || got.OriginalSize != len(got.Value) {
		t.Fatalf("size %d, original size %d: want the masked record's, %d and %d", got.Size, got.OriginalSize, want, len(got.Value))
	}
}
