// Package redact decides what of a message's content a person may see: header values by name and
// JSON values by path are masked for everyone, and everything derived from them (decoded
// dead-letter fields, message ids, error groups, plans) hides the same. An admin may reveal
// content, and the reveal is in the audit log before anything is shown.
package redact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/jsonpath"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/source"
)

// Redacted is what a hidden value is replaced with.
const Redacted = "••• redacted •••"

// Rules mask message content: header values by header name and JSON values by path. Everyone
// sees masked content by default; an admin may reveal it, audited (see For). Nil *Rules mask
// nothing.
type Rules struct {
	headers map[string]bool // lower-cased names
	paths   [][]pathSeg
	audit   audit.Recorder // where admins' reveals are recorded
	digest  string         // names these rules (Digest)
	// live holds the rules in force when they may change at run time (a config reload, see
	// PrepareReplace); copies made by Audited share it. Entry points (For, Active, RedactPlan)
	// take a snapshot of it, so that one request masks with one set of rules throughout.
	live *atomic.Pointer[Rules]
}

// New builds Rules from the config's redaction.headers and redaction.json_paths.
// A path is $ followed by .key, .* (any key), [n], [*] (any element), ['key'] or ["key"]:
// $.card.number, $.items[*].iban, $['odd.key']. An unparsable path is an error naming it.
func New(headers, jsonPaths []string) (*Rules, error) {
	rules, err := newRules(headers, jsonPaths)
	if err != nil {
		return nil, err
	}
	r := *rules // the rules at start, for direct calls; entry points read live
	r.live = &atomic.Pointer[Rules]{}
	r.live.Store(rules)
	return &r, nil
}

// PrepareReplace checks new rules and returns the function that puts them in force for every
// holder of r (and of its Audited copies); nothing changes when the rules are invalid.
func (r *Rules) PrepareReplace(headers, jsonPaths []string) (commit func(), err error) {
	rules, err := newRules(headers, jsonPaths)
	if err != nil {
		return nil, err
	}
	if r == nil || r.live == nil {
		return nil, errors.New("redaction: these rules cannot be replaced at run time")
	}
	return func() { r.live.Store(rules) }, nil
}

// current is the snapshot of the rules in force, carrying r's audit.
func (r *Rules) current() *Rules {
	if r == nil || r.live == nil {
		return r
	}
	c := *r.live.Load()
	c.audit = r.audit
	return &c
}

func newRules(headers, jsonPaths []string) (*Rules, error) {
	r := &Rules{headers: map[string]bool{}, digest: digestOf(headers, jsonPaths)}
	for _, h := range headers {
		if h = strings.TrimSpace(h); h != "" {
			r.headers[strings.ToLower(h)] = true
		}
	}
	for _, p := range jsonPaths {
		segs, err := parsePath(p)
		if err != nil {
			return nil, err
		}
		r.paths = append(r.paths, segs)
	}
	return r, nil
}

// Audited returns a copy of r that records admins' reveals in log.
func (r *Rules) Audited(log audit.Recorder) *Rules {
	if r == nil {
		return nil
	}
	c := *r
	c.audit = log
	return &c
}

// For is the rules that apply to what actor reads: content is masked for everyone by default;
// an admin who asks to reveal it sees it unmasked (nil), once the reveal is in the audit log as
// row (the request's actor and client, the target read) with action content.reveal. A reveal
// asked by anyone else is refused (ops.ErrForbidden); one the log cannot record is refused too
// (ops.ErrUnavailable), and nothing is shown unmasked. Nil masks nothing.
func (r *Rules) For(ctx context.Context, actor access.Actor, reveal bool, row audit.Entry) (*Rules, error) {
	r = r.current()
	if r == nil || (len(r.headers) == 0 && len(r.paths) == 0) {
		return nil, nil
	}
	if !reveal {
		return r, nil
	}
	if err := ops.Require(actor, access.Admin, "revealing redacted content"); err != nil {
		return nil, err
	}
	if r.audit != nil {
		row.Action, row.Outcome, row.Count = "content.reveal", audit.OutcomeOK, new(int64(1))
		// The row is written even if the reader went away mid-request: it is what was shown.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := r.audit.RecordAudit(ctx, row); err != nil {
			return nil, ops.Unavailable(err, "the audit log cannot be written, so the content stays masked") // no audit row, no reveal
		}
	}
	return nil, nil
}

// Active reports whether any rule is configured (pages offer "reveal" only then).
func (r *Rules) Active() bool {
	r = r.current()
	return r != nil && (len(r.headers) > 0 || len(r.paths) > 0)
}

// Header reports whether the value of the header called name must be masked (case-insensitive).
func (r *Rules) Header(name string) bool {
	return r != nil && r.headers[strings.ToLower(strings.TrimSpace(name))]
}

// JSON masks the values at the configured paths of a JSON document, keeping everything else (key
// order included; the output is compact). It reports whether anything was masked; when nothing
// was, or the body is not JSON, body is returned unchanged. A key that appears twice is masked
// both times, whichever one a reader would take.
func (r *Rules) JSON(body []byte) ([]byte, bool) {
	out, changed, _ := r.jsonMask(body)
	return out, changed
}

// jsonMask is JSON also returning the texts it masked.
func (r *Rules) jsonMask(body []byte) ([]byte, bool, []string) {
	if r == nil || len(r.paths) == 0 {
		return body, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	w := redactWriter{r: r, dec: dec}
	start := make([]match, len(r.paths))
	for i := range start {
		start[i] = match{path: i}
	}
	changed, err := w.value(start)
	if err != nil {
		return body, false, nil
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) { // trailing data: not one JSON document
		return body, false, nil
	}
	if !changed {
		return body, false, nil
	}
	return w.out.Bytes(), true, w.secrets
}

// pathSeg is one step of a path: an object key, any key, an array index or any element.
type pathSeg struct {
	kind  segKind
	key   string
	index int
}

type segKind uint8

const (
	segKey      = segKind(jsonpath.StepKey)
	segAnyKey   = segKind(jsonpath.StepAnyKey)
	segIndex    = segKind(jsonpath.StepIndex)
	segAnyIndex = segKind(jsonpath.StepAnyIndex)
)

// parsePath reads a redaction path by the one json_paths grammar (jsonpath.Parse).
func parsePath(p string) ([]pathSeg, error) {
	steps, err := jsonpath.Parse(p)
	if err != nil {
		return nil, fmt.Errorf("redaction %w", err)
	}
	segs := make([]pathSeg, len(steps))
	for i, s := range steps {
		segs[i] = pathSeg{kind: segKind(s.Kind), key: s.Key, index: s.Index}
	}
	return segs, nil
}

// match is how far into one path the walk has come.
type match struct{ path, pos int }

type redactWriter struct {
	r       *Rules
	dec     *json.Decoder
	out     bytes.Buffer
	scratch bytes.Buffer
	// secrets are the texts masked (string and number leaves), for the fields derived from them.
	secrets []string
}

// maxSecrets bounds what one document's masking remembers for its derived fields.
const maxSecrets = 256

func (w *redactWriter) secret(tok json.Token) {
	if len(w.secrets) >= maxSecrets {
		return
	}
	switch t := tok.(type) {
	case string:
		w.secrets = append(w.secrets, t)
	case json.Number:
		w.secrets = append(w.secrets, t.String())
	}
}

var errNotJSON = errors.New("not a JSON document")

func (w *redactWriter) value(ms []match) (bool, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.pos == len(w.r.paths[m.path]) {
			w.secret(tok)
			if err := w.skip(tok); err != nil {
				return false, err
			}
			w.writeString(Redacted)
			return true, nil
		}
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return w.object(ms)
		case '[':
			return w.array(ms)
		}
		return false, errNotJSON
	case string:
		w.writeString(t)
	case json.Number:
		w.out.WriteString(t.String())
	case bool:
		w.out.WriteString(strconv.FormatBool(t))
	case nil:
		w.out.WriteString("null")
	default:
		return false, errNotJSON
	}
	return false, nil
}

func (w *redactWriter) object(ms []match) (bool, error) {
	return w.members('{', '}', ms, func(int) (func(pathSeg) bool, error) {
		tok, err := w.dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errNotJSON
		}
		w.writeString(key)
		w.out.WriteByte(':')
		return func(s pathSeg) bool { return s.kind == segAnyKey || (s.kind == segKey && s.key == key) }, nil
	})
}

func (w *redactWriter) array(ms []match) (bool, error) {
	return w.members('[', ']', ms, func(i int) (func(pathSeg) bool, error) {
		return func(s pathSeg) bool { return s.kind == segAnyIndex || (s.kind == segIndex && s.index == i) }, nil
	})
}

// members copies an object's or an array's members, each value redacted down the paths whose
// next step accepts it: member writes what stands before the i-th value (an object's key) and
// says which steps accept it. One walk for both, so that they separate, close and fail alike.
func (w *redactWriter) members(open, end byte, ms []match, member func(i int) (func(pathSeg) bool, error)) (bool, error) {
	w.out.WriteByte(open)
	changed := false
	for i := 0; w.dec.More(); i++ {
		if i > 0 {
			w.out.WriteByte(',')
		}
		accepts, err := member(i)
		if err != nil {
			return false, err
		}
		c, err := w.value(w.advance(ms, accepts))
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	if _, err := w.dec.Token(); err != nil { // the closing '}' or ']'
		return false, err
	}
	w.out.WriteByte(end)
	return changed, nil
}

// advance keeps the paths whose next step accepts the child, one step further.
func (w *redactWriter) advance(ms []match, accepts func(pathSeg) bool) []match {
	var next []match
	for _, m := range ms {
		if p := w.r.paths[m.path]; m.pos < len(p) && accepts(p[m.pos]) {
			next = append(next, match{path: m.path, pos: m.pos + 1})
		}
	}
	return next
}

// skip consumes the rest of the value that tok starts.
func (w *redactWriter) skip(tok json.Token) error {
	d, ok := tok.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := w.dec.Token()
		if err != nil {
			return err
		}
		w.secret(t)
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// writeString writes s as a JSON string without HTML escaping (the output is data, and pages
// escape it when they render it).
func (w *redactWriter) writeString(s string) {
	w.scratch.Reset()
	enc := json.NewEncoder(&w.scratch)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	w.out.Write(bytes.TrimSuffix(w.scratch.Bytes(), []byte("\n")))
}

// ---- one masking pass over a message and everything derived from it ----

// messageMask is what one message's masking hid, so that every field derived from its content —
// decoded dead-letter fields, the message id, error-group keys and samples, other headers quoting
// a hidden value — hides the same. Derived values are compared by text: a value equal to a hidden
// one, containing it, or part of it, is hidden whole.
type messageMask struct {
	secrets []string
	// bodyWhole: the body was hidden whole (cut for size or not JSON), so any value read from it,
	// the message id included, is hidden unless it is also the value of a header left in clear.
	bodyWhole bool
	clear     []string // values of headers and properties shown in clear
}

// minContained is the shortest hidden value searched for anywhere inside a longer one (and the
// shortest derived value searched for inside a hidden one, or left at the end of a value cut
// inside a hidden one). A shorter hidden value — a PIN, a CVV — is searched for as a word: "pin 737
// refused" hides for 737, "o-7370" does not. A single character is only compared whole.
const minContained = 4

// matches reports whether the derived value v must be hidden: it is a hidden value, holds one,
// is part of one, or ends with the beginning of one — a value cut short inside it (Spring AMQP
// cuts x-exception-stacktrace to fit a frame, a page clips a line with "…").
func (m *messageMask) matches(v string) bool {
	if m == nil || v == "" {
		return false
	}
	v = strings.TrimSpace(v)
	cut := trimCutMark(v)
	for _, s := range m.secrets {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if v == s || (len(v) >= minContained && strings.Contains(s, v)) {
			return true
		}
		if len(s) >= minContained {
			if strings.Contains(v, s) || endsInside(cut, s) {
				return true
			}
		} else if len(s) > 1 && containsWord(v, s) {
			return true
		}
	}
	return false
}

// trimCutMark is v without what marks a cut at its end: an ellipsis, "...", white space.
func trimCutMark(v string) string {
	for {
		t := strings.TrimRightFunc(v, unicode.IsSpace)
		t = strings.TrimSuffix(strings.TrimSuffix(t, "…"), "...")
		if t == v {
			return v
		}
		v = t
	}
}

// endsInside reports whether v ends with at least minContained bytes that begin s (and not all
// of s, which Contains found): the value was cut inside the hidden one.
func endsInside(v, s string) bool {
	head := s[:minContained]
	from := max(0, len(v)-len(s)+1)
	for i := from; i <= len(v)-minContained; {
		j := strings.Index(v[i:], head)
		if j < 0 {
			return false
		}
		if strings.HasPrefix(s, v[i+j:]) {
			return true
		}
		i += j + 1
	}
	return false
}

// containsWord reports whether s stands in v as a word: not next to a letter or digit.
func containsWord(v, s string) bool {
	for i := 0; ; {
		j := strings.Index(v[i:], s)
		if j < 0 {
			return false
		}
		at := i + j
		before, _ := utf8.DecodeLastRuneInString(v[:at])
		after, _ := utf8.DecodeRuneInString(v[at+len(s):])
		if !wordRune(before) && !wordRune(after) {
			return true
		}
		i = at + 1
	}
}

func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// text is v, or Redacted when it is derived from hidden content.
func (m *messageMask) text(v string) string {
	if m.matches(v) {
		return Redacted
	}
	return v
}

// id is a message id, hidden when it matches hidden content, or when the body was hidden whole
// and no header or property shown in clear holds it (it may then come from the body).
func (m *messageMask) id(v string) string {
	if m == nil || v == "" {
		return v
	}
	if m.matches(v) {
		return Redacted
	}
	if m.bodyWhole {
		for _, c := range m.clear {
			if strings.TrimSpace(c) == strings.TrimSpace(v) {
				return v
			}
		}
		return Redacted
	}
	return v
}

// maskBody masks a body by the JSON paths: a body cut for size or not parseable as one JSON
// document is hidden whole when any path is configured (a rule could apply to what cannot be
// read). An empty body stays empty. It reports whether the body was changed.
func (r *Rules) maskBody(body []byte, truncated bool, m *messageMask) ([]byte, bool) {
	if r == nil || len(r.paths) == 0 || len(body) == 0 {
		return body, false
	}
	if !truncated {
		if !json.Valid(body) {
			m.bodyWhole = true
			return []byte(Redacted), true
		}
		out, changed, secrets := r.jsonMask(body)
		m.secrets = append(m.secrets, secrets...)
		return out, changed
	}
	m.bodyWhole = true
	return []byte(Redacted), true
}

// Body masks a whole body by the JSON paths (hidden whole when it is not one JSON document), for
// content stored apart from its message (an archived body, an edit's value). It reports whether
// the body was changed.
func (r *Rules) Body(body []byte) ([]byte, bool) { return r.maskBody(body, false, &messageMask{}) }

// ---- aggregates: what a masked header or path may have fed, by name ----

// messageIDHeaders are the header names a message id is read from by default (message_id.headers,
// Kafka's originalMessageId, the AMQP property): a masked one hides the ids of plans.
var messageIDHeaders = []string{"messageId", "eventId", "message-id", "x-message-id", "originalMessageId", "message_id"}

// messageIDPaths are the default message_id.json_paths.
var messageIDPaths = []string{"messageId", "eventId", "id"}

// masksAnyHeader reports whether one of names is masked.
func (r *Rules) masksAnyHeader(names []string) bool {
	for _, n := range names {
		if r.Header(n) {
			return true
		}
	}
	return false
}

// masksMessageIDs reports whether a message id may come from masked content: a masked id header,
// or a JSON path rule that names an id path, a part of it or a value inside it.
func (r *Rules) masksMessageIDs() bool {
	if r == nil {
		return false
	}
	if r.masksAnyHeader(messageIDHeaders) {
		return true
	}
	for _, p := range messageIDPaths {
		keys := strings.Split(p, ".")
		for _, segs := range r.paths {
			if pathsOverlap(segs, keys) {
				return true
			}
		}
	}
	return false
}

// pathsOverlap: one of the two paths is a prefix of the other (wildcards accept any key).
func pathsOverlap(segs []pathSeg, keys []string) bool {
	for i := 0; i < len(segs) && i < len(keys); i++ {
		switch segs[i].kind {
		case segAnyKey:
		case segKey:
			if segs[i].key != keys[i] {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// kafkaNames are the default names of the Kafka dead-letter headers.
var kafkaNames = kafkamodel.DefaultHeaderNames()

// masksExceptionType reports whether an error group's key (exception type and cause) may come
// from a masked header.
func (r *Rules) masksExceptionType() bool {
	return r != nil && (r.masksAnyHeader(kafkaNames.ExceptionType) || r.masksAnyHeader(kafkaNames.ExceptionCause))
}

// masksExceptionMessage reports whether an exception message (a Kafka error group's sample, a
// RabbitMQ group's key) may come from a masked header.
func (r *Rules) masksExceptionMessage() bool {
	return r != nil && (r.masksAnyHeader(kafkaNames.ExceptionMessage) || r.Header(rabbitmodel.HeaderExceptionMessage))
}

// Plan masks what a replay plan's items and error groups carry of message content, for
// every page and API answer that presents a plan: message ids read from a masked header or path,
// and error groups built from a masked exception header. Plans keep no headers, so the rules
// decide by name (see masksMessageIDs); a RabbitMQ plan's groups were read from its masked
// messages when planned (replay.Options.ShownRabbit); outbox plans take ids from the outbox's own
// columns, and their groups from last_error (see outboxPlan). Call it as plan = red.Plan(plan);
// nil masks nothing.
func (r *Rules) Plan(p replay.Plan) replay.Plan {
	r = r.current()
	if !r.Active() {
		return p
	}
	if p.Source.Kind == source.Outbox {
		return r.outboxPlan(p)
	}
	if ed := p.Source.Edit; ed != nil && ed.Diff != nil {
		masked := r.Edit(*ed)
		if id := ed.Diff.MessageID; id != nil && id[0] != "" && masked.Diff.MessageID[0] == Redacted {
			// The edit's warning names the id it replaces (replay's editWarning).
			p.Warnings = replaceAll(p.Warnings, " replaces "+id[0]+":", " replaces "+Redacted+":")
		}
		p.Source.Edit = masked
	}
	ids := r.masksMessageIDs()
	groups := r.masksExceptionType()
	if p.Source.Kind == source.RabbitMQ {
		groups = r.masksExceptionMessage()
	}
	if !ids && !groups {
		return p
	}
	if ids && len(p.Filter.MessageIDs) > 0 {
		// The ids a plan was asked for (by an admin who revealed them, or matching none).
		named := make([]string, len(p.Filter.MessageIDs))
		for i := range named {
			named[i] = Redacted
		}
		p.Filter.MessageIDs = named
	}
	items := make([]replay.Item, len(p.Items))
	for i, it := range p.Items {
		if ids && it.MessageID != "" {
			// A RabbitMQ locator names its message by id.
			it.Locator, it.MessageID = replay.LocatorMasked(it.Locator, it.MessageID, Redacted), Redacted
		}
		if groups && it.ErrorGroup != "" {
			it.ErrorGroup = maskGroup(p.Source.Kind, it.ErrorGroup)
		}
		items[i] = it
	}
	p.Items = items
	if groups {
		p.ErrorGroups = regroup(p.ErrorGroups, func(g string) string { return maskGroup(p.Source.Kind, g) })
	}
	return p
}

// replaceAll is texts with every old replaced by new (texts itself when none holds old).
func replaceAll(texts []string, old, new string) []string {
	var out []string
	for i, t := range texts {
		if !strings.Contains(t, old) {
			continue
		}
		if out == nil {
			out = append([]string(nil), texts...)
		}
		out[i] = strings.ReplaceAll(t, old, new)
	}
	if out == nil {
		return texts
	}
	return out
}

// LedgerEntry masks what a job's ledger row shows of its message, as Plan masks a plan's items:
// when message ids may come from masked content, its id, the id inside its locator (a RabbitMQ
// locator names its message by id) and the ids its detail quotes (FailureDetail). Nil rules mask
// nothing.
func (r *Rules) LedgerEntry(l replay.LedgerEntry) replay.LedgerEntry {
	r = r.current()
	if !r.masksMessageIDs() {
		return l
	}
	if l.MessageID != "" {
		l.Locator, l.MessageID = replay.LocatorMasked(l.Locator, l.MessageID, Redacted), Redacted
	}
	l.Detail = replay.DetailMasked(l.Detail, Redacted)
	return l
}

// FailureDetail is a job's failure text (a ledger row's detail, a failure group's) with the
// message ids it quotes hidden when ids may come from masked content, as Plan hides a plan's.
func (r *Rules) FailureDetail(detail string) string {
	r = r.current()
	if !r.masksMessageIDs() {
		return detail
	}
	return replay.DetailMasked(detail, Redacted)
}

// regroup is a plan's counts per error group under the groups' masked names: groups that mask to
// one name add up.
func regroup(groups map[string]map[replay.Action]int, mask func(string) string) map[string]map[replay.Action]int {
	if len(groups) == 0 {
		return groups
	}
	out := make(map[string]map[replay.Action]int, len(groups))
	for g, counts := range groups {
		k := mask(g)
		if out[k] == nil {
			out[k] = map[replay.Action]int{}
		}
		for a, n := range counts {
			out[k][a] += n
		}
	}
	return out
}

// outboxPlan masks an outbox plan's error groups: each is read from an event's last_error, which
// may repeat what its payload masks (OutboxEvent), and a plan keeps no payload. A group that is an
// exception class quotes no message and stays; any other is hidden when JSON paths are configured.
func (r *Rules) outboxPlan(p replay.Plan) replay.Plan {
	if !r.MasksPayloads() {
		return p
	}
	hide := func(g string) string {
		if g == "" || ops.IsExceptionClass(g) {
			return g
		}
		return Redacted
	}
	items := make([]replay.Item, len(p.Items))
	for i, it := range p.Items {
		it.ErrorGroup = hide(it.ErrorGroup)
		items[i] = it
	}
	p.Items = items
	p.ErrorGroups = regroup(p.ErrorGroups, hide)
	return p
}

// maskGroup hides a plan's error group: a RabbitMQ group is "reason exception", whose reason (the
// broker's word: rejected, expired, …) stays.
func maskGroup(kind source.Kind, g string) string {
	if g == "" {
		return g
	}
	if kind == source.RabbitMQ {
		reason, rest, _ := strings.Cut(g, " ")
		switch reason {
		case "rejected", "expired", "maxlen", "delivery_limit":
			if rest == "" {
				return g
			}
			return reason + " " + Redacted
		}
	}
	return Redacted
}

// Edit masks what an edit and retry's diff shows of the message as its page would (Record,
// Message): the value before and after at the configured JSON paths (whole when it is not JSON),
// the configured headers, then what quotes a hidden value (messageMask) — another header of the
// diff, or one the planner found masked in the whole message (EditDiff.Masked: a diff that keeps
// no value cannot tell that a header quotes it) — and the message id when ids are masked, when
// the planner found it masked, or when it quotes a hidden value. The edit itself (what a job
// publishes) is the stored plan's, never this copy.
func (r *Rules) Edit(ed replay.Edit) *replay.Edit {
	d := *ed.Diff
	m := &messageMask{}
	for _, v := range []*string{&d.ValueBefore, &d.ValueAfter} {
		if *v != "" {
			if b, changed := r.maskBody([]byte(*v), false, m); changed {
				*v = string(b)
			}
		}
	}
	for k, v := range d.Headers {
		if r.Header(k) {
			m.secrets = append(m.secrets, v[0], v[1])
		}
	}
	for k, v := range ed.SetHeaders {
		if r.Header(k) {
			m.secrets = append(m.secrets, v)
		}
	}
	if len(d.Headers) > 0 {
		h := make(map[string][2]string, len(d.Headers))
		for k, v := range d.Headers {
			switch {
			case r.Header(k):
				v = [2]string{Redacted, Redacted}
			case slices.Contains(d.Masked, k):
				v = [2]string{maskNonEmpty(v[0]), m.text(v[1])}
			default:
				v = [2]string{m.text(v[0]), m.text(v[1])}
			}
			h[k] = v
		}
		d.Headers = h
	}
	if id := d.MessageID; id != nil && (r.masksMessageIDs() || d.MessageIDMasked || m.matches(id[0])) {
		d.MessageID = &[2]string{Redacted, id[1]}
	}
	if ed.Value != nil {
		if b, changed := r.Body([]byte(*ed.Value)); changed {
			v := string(b)
			ed.Value = &v
		}
	}
	if len(ed.SetHeaders) > 0 {
		set := make(map[string]string, len(ed.SetHeaders))
		for k, v := range ed.SetHeaders {
			if r.Header(k) {
				v = Redacted
			} else {
				v = m.text(v)
			}
			set[k] = v
		}
		ed.SetHeaders = set
	}
	ed.Diff = &d
	return &ed
}
