// Package handlers holds the console's thin HTTP handlers: parse and validate input, call ops,
// then render a templ view or encode a JSON type. They return errors; web's error handler turns
// them into a status code, a JSON error or an error page, in one place.
package handlers

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/components"
)

const actorKey = "redrive.actor"

// SetActor records the request's actor; called by the auth middleware.
func SetActor(c echo.Context, a access.Actor) { c.Set(actorKey, a) }

// ActorOf returns the request's actor (access.Anonymous when the middleware set none).
func ActorOf(c echo.Context) access.Actor {
	if a, ok := c.Get(actorKey).(access.Actor); ok {
		return a
	}
	return access.Anonymous
}

const loggerKey = "redrive.logger"

// SetLogger gives the request's handlers the console's logger (web sets it on every request).
func SetLogger(c echo.Context, l *slog.Logger) { c.Set(loggerKey, l) }

// loggerOf is the request's logger (slog.Default when web set none).
func loggerOf(c echo.Context) *slog.Logger {
	if log, _ := c.Get(loggerKey).(*slog.Logger); log != nil {
		return log
	}
	return slog.Default()
}

// shown is what a page or an answer says of err where it shows it in place of what could not be
// read (a panel, an "error" field, the last line of a stream) rather than failing the request:
// ops.Message's words, never an outside system's error text. The internal error, when it says
// more, is logged with the request ID, as web's error handler does for a failed request.
func shown(c echo.Context, err error) string {
	msg := ops.Message(err)
	if internal := err.Error(); internal != msg {
		loggerOf(c).Warn("shown in place of a result", "err", internal, "request_id", c.Response().Header().Get(echo.HeaderXRequestID),
			"method", c.Request().Method, "uri", c.Request().RequestURI)
	}
	return msg
}

// render writes a templ component as an HTML response. Control and bidi characters and invalid
// UTF-8 from message content are shown as escapes (components.VisibleHTML), on every page.
func render(c echo.Context, status int, page templ.Component) error {
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer keepPageBuffer(buf)
	if err := page.Render(c.Request().Context(), buf); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	// The response copies what it is given (the server's, or gzip's, buffer) before Write returns:
	// the buffer is free again when HTMLBlob is.
	return c.HTMLBlob(status, components.VisibleHTML(buf.Bytes()))
}

// pageBuffers are the buffers pages render into, kept between requests. A dead-letter topic's
// page of 50 records is 600 KB (each record's full view, forms and copy buttons included): growing
// a fresh buffer to that for every request (a dozen doubling copies into memory new to the
// process) cost as much as the render itself (BenchmarkRenderPage: 1.8 ms against 3.5 ms).
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxKeptPageBuffer: a buffer grown past it (an unusually large page) is dropped, not kept, so
// that one large page does not hold its memory for as long as the pool keeps it.
const maxKeptPageBuffer = 4 << 20

func keepPageBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxKeptPageBuffer {
		return
	}
	buf.Reset()
	pageBuffers.Put(buf)
}

// MaxJSONBody caps JSON request bodies, ids lists included: 10,000 ids (the most one request
// takes) of 19 digits are about 200 KB.
const MaxJSONBody = 1 << 20

// BodyTooLarge is the 413 of a request body over limit bytes: it names the limit, and how to stay
// under it.
func BodyTooLarge(limit int64) error {
	return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf(
		"body: larger than %d MiB, the most the console reads; send fewer ids per request (at most %d)", limit>>20, outbox.MaxIDs))
}

// answerJSON answers an API route that takes a JSON body: the body decoded into a Req (decodeJSON,
// with its 4xx), do's result written by wire as a 200 (do's error returned, for the error
// handler).
func answerJSON[Req, Out, Resp any](c echo.Context, do func(echo.Context, Req) (Out, error), wire func(Out) Resp) error {
	var req Req
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	out, err := do(c, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire(out))
}

// decodeJSON reads a JSON body strictly: the right content type (which a cross-site HTML form
// cannot send, so cookie-less JSON calls are not a CSRF vector), at most MaxJSONBody bytes (a 413
// naming the limit), no unknown fields, one value, and no string that no handler can use
// (stringProblem).
func decodeJSON(c echo.Context, into any) error {
	mt, _, _ := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if mt != echo.MIMEApplicationJSON {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "send the body as JSON with Content-Type: application/json")
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, MaxJSONBody+1))
	switch {
	case errors.Is(err, echo.ErrStatusRequestEntityTooLarge) || len(body) > MaxJSONBody:
		return BodyTooLarge(MaxJSONBody)
	case err != nil:
		return ops.Invalid("body", "could not be read: the client stopped sending it")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return ops.Invalid("body", "empty; send a JSON object")
		case errors.As(err, &syntax):
			return ops.Invalid("body", fmt.Sprintf("malformed JSON at byte %d", syntax.Offset))
		case errors.As(err, &typ):
			if typ.Field == "" {
				return ops.Invalid("body", "the request body must be a JSON object, got "+jsonKind(typ.Value))
			}
			if problem, ok := wholeNumberProblem(typ.Type, typ.Value); ok {
				return ops.Invalid(typ.Field, problem)
			}
			return ops.Invalid(typ.Field, fmt.Sprintf("must be %s, got %s", jsonType(typ.Type), jsonKind(typ.Value)))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			// encoding/json has no typed error for this one.
			return ops.Invalid("body", strings.TrimPrefix(err.Error(), "json: ")+" (check the field name)")
		default:
			return ops.Invalid("body", "could not be read as JSON")
		}
	}
	// Only JSON's white space may follow the object: dec.More is false before a stray '}' or
	// ']', so "{}}" would pass it (and bytes.TrimSpace would take a \v for white space).
	if rest := bytes.Trim(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return ops.Invalid("body", "one JSON object expected, found more")
	}
	return stringProblem(body)
}

// stringProblem refuses, naming it by its path (filter.event_type, ids[3]), the first string of a
// JSON document (one that decodes) that no handler can use: invalid UTF-8, which encoding/json
// would quietly turn into U+FFFD, and a NUL character (\u0000), which PostgreSQL refuses, so that
// it came back as a 503 blaming the store. The top-level reason is the exception for NUL: a reason
// is kept as the audit log keeps it, NULs dropped (reasonText).
func stringProblem(body []byte) error {
	type level struct {
		array bool
		key   string // an object's member being read
		index int    // an array's element being read
		value bool   // an object's next string is a value (its key was read)
	}
	var stack []*level
	path := func(stack []*level) string {
		var b strings.Builder
		for _, l := range stack {
			switch {
			case l.array:
				fmt.Fprintf(&b, "[%d]", l.index)
			case b.Len() > 0:
				b.WriteString("." + l.key)
			default:
				b.WriteString(l.key)
			}
		}
		return b.String()
	}
	// read marks the end of a value in the level that holds it.
	read := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.array {
			top.index++
		} else {
			top.value = false
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	start := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end: Decode judged the syntax already
		}
		// The token's bytes, with the separators before it (ASCII): a string is as it was sent.
		raw := body[start:dec.InputOffset()]
		start = dec.InputOffset()
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, &level{array: t == '['})
				continue
			}
			stack = stack[:len(stack)-1]
			read()
		case string:
			var top *level
			if len(stack) > 0 {
				top = stack[len(stack)-1]
			}
			if top != nil && !top.array && !top.value { // a member's name
				if problem := textProblem(raw, t); problem != "" {
					if in := path(stack[:len(stack)-1]); in != "" {
						return ops.Invalid("a field name in "+in, problem)
					}
					return ops.Invalid("a field name", problem)
				}
				top.key, top.value = t, true
				continue
			}
			problem := textProblem(raw, t)
			if problem != "" && !(len(stack) == 1 && top.key == "reason" && utf8.Valid(raw)) {
				return ops.Invalid(path(stack), problem)
			}
			read()
		default:
			read()
		}
	}
}

// textProblem is ops.TextProblem of a JSON string: raw as sent (where invalid UTF-8 shows) and s
// as decoded (where an escaped NUL shows).
func textProblem(raw []byte, s string) string {
	if !utf8.Valid(raw) {
		return ops.TextProblem(string(raw))
	}
	return ops.TextProblem(s)
}

// jsonType names a Go type the way the JSON it is decoded from is written.
func jsonType(t reflect.Type) string {
	if t == nil {
		return "a value of another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "a JSON array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if t.Bits() == 64 { // an id, an offset: its range is Go's, not one a person could mean
			return "a whole number"
		}
		return fmt.Sprintf("an integer between %d and %d", minInt(t.Bits()), maxInt(t.Bits()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t.Bits() == 64 {
			return "a whole number, 0 or more"
		}
		return fmt.Sprintf("an integer between 0 and %d", uint64(1)<<t.Bits()-1)
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value of another type"
}

// wholeNumberProblem says what is wrong with a JSON number encoding/json would not put in an
// integer field (value as its UnmarshalTypeError has it, "number 1.5"): a fraction, a number too
// large or small for any use, or a whole number written with an exponent or a fraction part
// (1e6, 1.0). It does not quote the Go type's range: the field's own check names the range that
// matters once the number is a whole one. false when t is not an integer or value not a number.
func wholeNumberProblem(t reflect.Type, value string) (string, bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	num, isNumber := strings.CutPrefix(value, "number ")
	if t == nil || !isNumber {
		return "", false
	}
	var lo, hi float64
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		lo, hi = float64(minInt(t.Bits())), float64(maxInt(t.Bits()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		lo, hi = 0, float64(uint64(1)<<t.Bits()-1)
	default:
		return "", false
	}
	got := "got the number " + num
	// Digits alone were refused for being out of the type's range; float64 cannot tell 2^63 from
	// 2^63-1, so the digits decide that, not the comparison.
	digits := !strings.ContainsAny(num, ".eE")
	f, err := strconv.ParseFloat(num, 64)
	switch {
	case err == nil && f != math.Trunc(f):
		return "must be a whole number, " + got, true
	case f < 0 && lo == 0:
		return "must not be negative, " + got, true
	case f < lo || digits && f < 0:
		return "must be a whole number, " + got + ", which is far too small", true
	case f > hi || digits:
		return "must be a whole number, " + got + ", which is far too large", true
	}
	return "must be a whole number written in digits (1000000, not 1e6 or 1000000.0), " + got, true
}

func minInt(bits int) int64 { return -1 << (bits - 1) }
func maxInt(bits int) int64 { return 1<<(bits-1) - 1 }

// jsonKind is encoding/json's description of the value it found ("array", "number 1e99", …),
// read as a noun.
func jsonKind(v string) string {
	kind, detail, _ := strings.Cut(v, " ")
	switch kind {
	case "array", "object":
		return "an " + kind
	case "string", "bool":
		return "a " + strings.Replace(kind, "bool", "boolean", 1)
	case "number":
		if detail != "" {
			return "the number " + detail
		}
		return "a number"
	case "null":
		return "null"
	}
	return "a " + v
}

// textWithin refuses a text longer than max characters (not bytes), naming the field.
func textWithin(name, v string, max int) error {
	if n := utf8.RuneCountInString(v); n > max {
		return ops.Invalid(name, fmt.Sprintf("must be at most %d characters (it has %d)", max, n))
	}
	return nil
}

// maxReason bounds a written reason, in characters: it goes to the audit log, often beside the
// dead letters it explains.
const maxReason = 1000

// requiredReason is the reason a person must give for an action (why says what it is for), as
// the audit log keeps it (reasonText). A reason that is then empty is refused.
func requiredReason(raw, why string) (string, error) {
	reason, err := reasonText(raw)
	if err == nil && reason == "" {
		return "", ops.Invalid("reason", "required: "+why)
	}
	return reason, err
}

// reasonText is a reason as the audit log keeps it: without NULs and the white space around it;
// "" when nothing in it shows (only spaces and invisible characters). One that is not UTF-8 text
// is refused (the bytes are not what the person typed), and so is one longer than maxReason
// characters (not bytes: 1000 Chinese characters are 3000 bytes).
func reasonText(raw string) (string, error) {
	if !utf8.ValidString(raw) {
		return "", ops.Invalid("reason", ops.TextProblem(raw))
	}
	reason := strings.TrimSpace(ops.CleanText(raw, len(raw)))
	switch {
	case strings.IndexFunc(reason, visible) < 0:
		return "", nil
	case utf8.RuneCountInString(reason) > maxReason:
		return "", ops.Invalid("reason", fmt.Sprintf("at most %d characters", maxReason))
	}
	return reason, nil
}

// visible reports a character that shows: not white space, a control or a format character
// (a zero-width space, a direction mark).
func visible(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r)
}

// pageQuery reads a keyset-paged list's ?limit= (def when absent, at most max) and ?cursor= (the
// next_cursor of the page before; 0 for the first page).
func pageQuery(c echo.Context, def, max int64) (limit int, before int64, err error) {
	n, err := queryInt(c, "limit", def, 1, max)
	if err != nil {
		return 0, 0, err
	}
	if before, err = queryInt(c, "cursor", 0, 1, 1<<62); err != nil {
		return 0, 0, ops.Invalid("cursor", "must be the next_cursor value of a previous page")
	}
	return int(n), before, nil
}

// keysetPage reads one page of a list paged by id, newest first (pageQuery), at most limit rows,
// and the cursor of the page after it: the last row's id, or 0 where the list ends. list is asked
// for one row more than the page, so that a page that ends the list exactly offers no cursor to an
// empty page.
func keysetPage[T any](limit int, id func(T) int64, list func(limit int) ([]T, error)) ([]T, int64, error) {
	rows, err := list(limit + 1)
	if err != nil || len(rows) <= limit {
		return rows, 0, err
	}
	rows = rows[:limit]
	return rows, id(rows[limit-1]), nil
}

// cursorJSON is a next cursor as the list APIs answer it: a string, null on the last page.
func cursorJSON(next int64) *string {
	if next <= 0 {
		return nil
	}
	s := strconv.FormatInt(next, 10)
	return &s
}

// nextPageURL is the link to the page after this one at path: this page's query with the next
// cursor; "" on the last page.
func nextPageURL(c echo.Context, path string, next int64) string {
	if next <= 0 {
		return ""
	}
	q := c.QueryParams()
	q.Set("cursor", strconv.FormatInt(next, 10))
	return paths.WithQuery(path, q)
}

// optionalCount reads an optional non-negative integer (an offset, a limit, a rate) from a form
// or a query: nil when raw is empty.
func optionalCount(name, raw string) (*int64, error) {
	if raw == "" {
		return nil, nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < 0 {
		return nil, ops.Invalid(name, "must be a non-negative integer")
	}
	return &v, nil
}

// OnlyParams refuses a query parameter not in known, naming it (cut to outbox.EchoLimit bytes)
// and listing the known ones: a misspelt filter would otherwise be ignored, and list more than
// the caller asked for ("nothing of the kind", or the wrong events to act on).
func OnlyParams(c echo.Context, known []string) error {
	for _, name := range slices.Sorted(maps.Keys(c.QueryParams())) {
		if slices.Contains(known, name) {
			continue
		}
		if len(known) == 0 {
			return ops.Invalid(payload.Clip(name, outbox.EchoLimit), "unknown query parameter; this one takes none")
		}
		return ops.Invalid(payload.Clip(name, outbox.EchoLimit), "unknown query parameter; known: "+strings.Join(known, ", "))
	}
	return nil
}

// queryInt parses an optional integer query parameter within [min, max].
func queryInt(c echo.Context, name string, def, min, max int64) (int64, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < min || v > max {
		return 0, ops.Invalid(name, fmt.Sprintf("must be an integer between %d and %d", min, max))
	}
	return v, nil
}

// queryBool parses an optional boolean query parameter.
func queryBool(c echo.Context, name string) (bool, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(raw)
	if err != nil {
		return false, ops.Invalid(name, "must be true or false")
	}
	return v, nil
}

// queryTime parses an optional time: RFC 3339, a date (2006-01-02), a datetime-local value
// (2006-01-02T15:04, UTC), or an age such as 15m, 6h, 7d meaning that long ago. None is the zero
// time, so a time before 1970 is refused (boundedTime).
func queryTime(c echo.Context, name string, now time.Time) (time.Time, error) {
	raw := strings.TrimSpace(c.QueryParam(name))
	if raw == "" {
		return time.Time{}, nil
	}
	t, ok := boundedTime(raw, now)
	if !ok {
		return time.Time{}, ops.Invalid(name, "must be RFC 3339 (2026-11-30T06:00:00Z) or a date (2026-11-30) between 1970 and 9999, or an age like 15m, 6h, 7d")
	}
	return t, nil
}

// boundedTime is parseTime for the callers whose "none" is the zero time: it refuses a time before
// 1970. Nothing here (a record's timestamp, an outbox row, an audit entry) is older, and the year
// 1 is the zero time, so an until of 0001-01-01 was read as no bound and matched everything
// instead of nothing. (The callers that tell "given" by a pointer take the year 1 as a time.)
func boundedTime(raw string, now time.Time) (time.Time, bool) {
	t, ok := parseTime(raw, now)
	return t, ok && !t.Before(time.Unix(0, 0)) && !t.After(lastTime)
}

// lastTime is the last instant a bound may name: MySQL's DATETIME ends with the year 9999, and a
// time past it (9999-12-31T23:59:59-12:00 is in the year 10000 in UTC) was refused by the driver
// before its query left, which read as the database not answering.
var lastTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)

func parseTime(raw string, now time.Time) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, raw, time.UTC); err == nil {
			return t, true
		}
	}
	if d, ok := parseAge(raw); ok {
		return now.Add(-d), true
	}
	return time.Time{}, false
}

// parseAge reads Go durations plus a "d" (day) unit.
func parseAge(raw string) (time.Duration, bool) {
	if n, ok := strings.CutSuffix(raw, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 3650 {
			return 0, false
		}
		return time.Duration(days) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		return 0, false
	}
	return d, true
}

// clientInfo is what the audit log records about where a request came from.
func clientInfo(c echo.Context) (ip, userAgent string) {
	ua := c.Request().UserAgent()
	if len(ua) > 512 {
		ua = ua[:512]
	}
	return c.RealIP(), ua
}

// PathParam returns a path parameter as the name it stands for. echo matches on the raw path
// when the request's path has escapes (then "%2F", the RabbitMQ vhost "/", arrives still escaped)
// and on the decoded path otherwise, so it is unescaped only in the first case; the forms that
// paths.Segment gives "." and ".." are read back.
func PathParam(c echo.Context, name string) string {
	return paths.ParseSegment(c.Param(name), c.Request().URL.RawPath != "")
}

func pathParam(c echo.Context, name string) string { return PathParam(c, name) }

// below reads ret as a path on this console that is base or below it. Dot segments are judged
// as a browser or a server would resolve them: a path that path.Clean changes (../, an escaped
// %2F.., a doubled slash) is not taken, so ".." cannot climb out of base once the prefix matched.
func below(ret, base string) (*url.URL, bool) {
	if ret == "" {
		return nil, false
	}
	u, err := url.Parse(ret)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.User != nil || path.Clean(u.Path) != u.Path {
		return nil, false
	}
	p := u.EscapedPath()
	return u, p == base || strings.HasPrefix(p, base+"/")
}

// flashCookie carries what the last form action did to the page it redirects to, once.
const flashCookie = "redrive_flash"

// flashKey signs a flash: keyed with the request's CSRF token (web's "csrf"), which is the
// browser's own (its session's, or its CSRF cookie's), so that a flash planted from elsewhere
// does not verify; nil when the request has none (no flash is set or shown then).
func flashKey(c echo.Context) []byte {
	token, _ := c.Get("csrf").(string)
	if token == "" {
		return nil
	}
	return []byte("redrive flash v1 " + token)
}

func flashMAC(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// setFlash keeps msg for the page the response redirects to (readFlash): in a short-lived,
// signed, HttpOnly cookie, never in the URL — page text taken from a query parameter let anyone
// put words in the console's callout (?flash=Call+555-0100+now), and a reload repeated it.
func setFlash(c echo.Context, msg string) {
	key := flashKey(c)
	if key == nil || msg == "" {
		return
	}
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(msg)) + "." + flashMAC(key, msg),
		Path: "/", MaxAge: 60, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.IsTLS()})
}

// readFlash is the flash setFlash kept for this page, if any and signed for this browser, and
// clears it: shown once, a reload does not repeat it.
func readFlash(c echo.Context) string {
	ck, err := c.Cookie(flashCookie)
	if err != nil || ck.Value == "" {
		return ""
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.IsTLS()})
	enc, mac, ok := strings.Cut(ck.Value, ".")
	key := flashKey(c)
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if !ok || err != nil || key == nil || !hmac.Equal([]byte(mac), []byte(flashMAC(key, string(raw)))) {
		return ""
	}
	return string(raw)
}
