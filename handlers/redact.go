package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
)

// Redacted is what a hidden value is replaced with.
const Redacted = "••• redacted •••"

// Redactor masks message content: header values by header name and JSON values by path. Everyone
// sees masked content by default; an admin may reveal it, audited (see For). A nil *Redactor masks
// nothing.
type Redactor struct {
	headers map[string]bool // lower-cased names
	paths   [][]pathSeg
	audit   Auditor // where admins' reveals are recorded
}

// NewRedactor builds a Redactor from the config's redaction.headers and redaction.json_paths.
// A path is $ followed by .key, .* (any key), [n], [*] (any element), ['key'] or ["key"]:
// $.card.number, $.items[*].iban, $['odd.key']. An unparsable path is an error naming it.
func NewRedactor(headers, jsonPaths []string) (*Redactor, error) {
	r := &Redactor{headers: map[string]bool{}}
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

// Audited returns a copy of r that records admins' reveals in audit.
func (r *Redactor) Audited(audit Auditor) *Redactor {
	if r == nil {
		return nil
	}
	c := *r
	c.audit = audit
	return &c
}

// For is the Redactor that applies to a request: content is masked for everyone by default; an
// admin may add reveal=true to see it unmasked, which is audited (action content.reveal, target).
// A reveal asked by anyone else is refused (ops.ErrForbidden). nil masks nothing.
func (r *Redactor) For(c echo.Context, target string) (*Redactor, error) {
	if r == nil || (len(r.headers) == 0 && len(r.paths) == 0) {
		return nil, nil
	}
	reveal, err := queryBool(c, "reveal")
	if err != nil || !reveal {
		return r, err
	}
	actor := ActorOf(c)
	if actor.Role != RoleAdmin {
		return nil, fmt.Errorf("%w: revealing redacted content needs the admin role", ops.ErrForbidden)
	}
	if r.audit != nil {
		if err := recordAudit(c, r.audit, "content.reveal", target, 1, "", map[string]any{"path": c.Request().URL.Path}, nil); err != nil {
			return nil, err // no audit row, no reveal
		}
	}
	return nil, nil
}

// Active reports whether any rule is configured (pages offer "reveal" only then).
func (r *Redactor) Active() bool { return r != nil && (len(r.headers) > 0 || len(r.paths) > 0) }

// Header reports whether the value of the header called name must be masked (case-insensitive).
func (r *Redactor) Header(name string) bool {
	return r != nil && r.headers[strings.ToLower(strings.TrimSpace(name))]
}

// JSON masks the values at the configured paths of a JSON document, keeping everything else (key
// order included; the output is compact). It reports whether anything was masked; when nothing
// was, or the body is not JSON, body is returned unchanged. A key that appears twice is masked
// both times, whichever one a reader would take.
func (r *Redactor) JSON(body []byte) ([]byte, bool) {
	if r == nil || len(r.paths) == 0 {
		return body, false
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
		return body, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) { // trailing data: not one JSON document
		return body, false
	}
	if !changed {
		return body, false
	}
	return w.out.Bytes(), true
}

// pathSeg is one step of a path: an object key, any key, an array index or any element.
type pathSeg struct {
	kind  segKind
	key   string
	index int
}

type segKind uint8

const (
	segKey segKind = iota
	segAnyKey
	segIndex
	segAnyIndex
)

func parsePath(p string) ([]pathSeg, error) {
	bad := func(why string) error {
		return fmt.Errorf("redaction path %q: %s (write it like $.card.number or $.items[*].iban)", p, why)
	}
	rest, ok := strings.CutPrefix(p, "$")
	if !ok {
		return nil, bad("must start with $")
	}
	var segs []pathSeg
	for rest != "" {
		switch {
		case rest[0] == '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			key := rest[1 : 1+end]
			switch {
			case key == "":
				return nil, bad("empty key")
			case key == "*":
				segs = append(segs, pathSeg{kind: segAnyKey})
			default:
				segs = append(segs, pathSeg{kind: segKey, key: key})
			}
			rest = rest[1+end:]
		case strings.HasPrefix(rest, "[*]"):
			segs = append(segs, pathSeg{kind: segAnyIndex})
			rest = rest[3:]
		case strings.HasPrefix(rest, "['"), strings.HasPrefix(rest, `["`):
			closing := rest[1:2] + "]"
			end := strings.Index(rest[2:], closing)
			if end < 0 {
				return nil, bad("unterminated quoted key")
			}
			segs = append(segs, pathSeg{kind: segKey, key: rest[2 : 2+end]})
			rest = rest[2+end+2:]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, bad("unterminated [")
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 || rest[1] == '+' {
				return nil, bad("an index must be a number or *")
			}
			segs = append(segs, pathSeg{kind: segIndex, index: n})
			rest = rest[end+1:]
		default:
			return nil, bad(fmt.Sprintf("unexpected %q", rest[:1]))
		}
	}
	if len(segs) == 0 {
		return nil, bad("names nothing inside the document")
	}
	return segs, nil
}

// match is how far into one path the walk has come.
type match struct{ path, pos int }

type redactWriter struct {
	r       *Redactor
	dec     *json.Decoder
	out     bytes.Buffer
	scratch bytes.Buffer
}

var errNotJSON = errors.New("not a JSON document")

func (w *redactWriter) value(ms []match) (bool, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.pos == len(w.r.paths[m.path]) {
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
	w.out.WriteByte('{')
	changed := false
	for i := 0; w.dec.More(); i++ {
		tok, err := w.dec.Token()
		if err != nil {
			return false, err
		}
		key, ok := tok.(string)
		if !ok {
			return false, errNotJSON
		}
		if i > 0 {
			w.out.WriteByte(',')
		}
		w.writeString(key)
		w.out.WriteByte(':')
		c, err := w.value(w.advance(ms, func(s pathSeg) bool {
			return s.kind == segAnyKey || (s.kind == segKey && s.key == key)
		}))
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	if _, err := w.dec.Token(); err != nil { // '}'
		return false, err
	}
	w.out.WriteByte('}')
	return changed, nil
}

func (w *redactWriter) array(ms []match) (bool, error) {
	w.out.WriteByte('[')
	changed := false
	for i := 0; w.dec.More(); i++ {
		if i > 0 {
			w.out.WriteByte(',')
		}
		c, err := w.value(w.advance(ms, func(s pathSeg) bool {
			return s.kind == segAnyIndex || (s.kind == segIndex && s.index == i)
		}))
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	if _, err := w.dec.Token(); err != nil { // ']'
		return false, err
	}
	w.out.WriteByte(']')
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
