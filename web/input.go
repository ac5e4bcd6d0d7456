package web

import (
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/paths"
)

// validInput refuses, with 400 naming the parameter, query and path parameters that no handler
// can use: a malformed query string, NUL bytes and invalid UTF-8. They would otherwise reach
// PostgreSQL ("invalid byte sequence for encoding UTF8") or a broker and come back as a 5xx blamed
// on a dependency.
func validInput(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return ops.Invalid("query string", "malformed: escape % as %25 and separate parameters with &")
		}
		for k, vs := range q {
			if problem := ops.TextProblem(k); problem != "" {
				return ops.Invalid("a query parameter name", problem)
			}
			for _, v := range vs {
				if problem := ops.TextProblem(v); problem != "" {
					return ops.Invalid(k, problem)
				}
			}
		}
		for _, name := range c.ParamNames() {
			v := handlers.PathParam(c, name)
			if v == "" && name != "*" { // "/rabbitmq/main/queues//nope": echo matches an empty segment
				return ops.Invalid(paramLabel(c.Path(), name), "required (the path has an empty segment)")
			}
			if problem := ops.TextProblem(v); problem != "" {
				return ops.Invalid(paramLabel(c.Path(), name), problem)
			}
			if max, ok := maxParamBytes[name]; ok && len(v) > max {
				return ops.Invalid(paramLabel(c.Path(), name), fmt.Sprintf("must be at most %d bytes (it has %d)", max, len(v)))
			}
		}
		if err := validForm(c); err != nil {
			return err
		}
		return next(c)
	}
}

// maxParamBytes bounds the path parameters whose system has a limit: RabbitMQ's names are AMQP
// short strings, at most 255 bytes. A longer one can name nothing; the management API refused it
// (414), which read as the broker being down, with the whole name quoted back.
var maxParamBytes = map[string]int{"vhost": 255, "queue": 255}

// validForm refuses a form body the handlers could not use, as validInput does a query string:
// one that could not be read (larger than the body limit, malformed), and a field with a NUL or
// invalid UTF-8 (a reason of %ff%fe read as "reason: required", a NUL event type reached
// PostgreSQL and came back as a 503 blamed on the database).
func validForm(c echo.Context) error {
	r := c.Request()
	if !isForm(r) {
		return nil
	}
	if err := parseForm(c); err != nil {
		if errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return handlers.BodyTooLarge(maxBody)
		}
		return ops.Invalid("form", "could not be read: in a URL-encoded body, escape % as %25 and separate fields with &")
	}
	for _, k := range slices.Sorted(maps.Keys(r.PostForm)) {
		if problem := ops.TextProblem(k); problem != "" {
			return ops.Invalid("a form field name", problem)
		}
		for _, v := range r.PostForm[k] {
			if problem := ops.TextProblem(v); problem != "" {
				return ops.Invalid(payload.Clip(k, outbox.EchoLimit), problem)
			}
		}
	}
	return nil
}

// isForm reports a request whose body is a form (URL-encoded or multipart) that a handler reads.
func isForm(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	return mt == echo.MIMEApplicationForm || mt == echo.MIMEMultipartForm
}

const formErrKey = "redrive.form_error"

// parseForm reads a form body once, for every reader after it (echo's FormValue reads the parsed
// values), and says whether it could be read.
func parseForm(c echo.Context) error {
	r := c.Request()
	if r.PostForm == nil {
		// ParseMultipartForm alone, as echo's form lookup calls it, loses a URL-encoded body's
		// error (it answers http.ErrNotMultipart instead).
		err := r.ParseForm()
		if mt, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType)); err == nil && mt == echo.MIMEMultipartForm {
			err = r.ParseMultipartForm(32 << 20) // the body limit caps the body
		}
		c.Set(formErrKey, err)
	}
	err, _ := c.Get(formErrKey).(error)
	return err
}

// maxBody caps every request body: a form of 10,000 ticked ids is about 200 KB. JSON bodies are
// held to handlers.MaxJSONBody.
const maxBody = 2 << 20

// bodyLimit is echo's body limit of maxBody whose 413 names the limit (handlers.BodyTooLarge):
// echo's said only "Request Entity Too Large". A JSON body is told the JSON limit, which it is
// over too.
func bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	limited := middleware.BodyLimit(strconv.Itoa(maxBody>>20) + "M")(next)
	return func(c echo.Context) error {
		err := limited(c)
		if !errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return err
		}
		if mt, _, _ := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType)); mt == echo.MIMEApplicationJSON {
			return handlers.BodyTooLarge(handlers.MaxJSONBody)
		}
		return handlers.BodyTooLarge(maxBody)
	}
}

// idLabels name a route's :id by the first of these its route contains (in order: a replay
// plan's /replays/plans/:id is a plan id, not a replay id).
var idLabels = []struct{ in, label string }{
	{"/silences/", "silence id"},
	{"/offsets/", "offset plan id"},
	{paths.Archive + "/", "archived message id"},
	{"/events/", "event id"},
	{"/plans/", "plan id"},
	{paths.Replays + "/", "replay id"},
}

// paramLabel names a route's path parameter the way a person reads the URL.
func paramLabel(route, name string) string {
	switch name {
	case "name":
		if strings.Contains(route, "/channels/") {
			return "channel name"
		}
		return "outbox name"
	case "id":
		for _, l := range idLabels {
			if strings.Contains(route, l.in) {
				return l.label
			}
		}
		return "id"
	case "*":
		return "path"
	}
	return name // cluster, group, topic, broker, vhost, queue
}

// knownMethod answers 405, with the Allow header, a request to a path that has routes but none for
// its method, before the CSRF check: a PUT to /healthz is a wrong method, not a forged form, and
// "missing CSRF token" would send its caller looking for a token that would not help. It runs
// after authentication, so an anonymous caller still learns only that it must sign in. OPTIONS
// keeps echo's answer (the allowed methods).
func knownMethod(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, ok := c.Get(echo.ContextKeyHeaderAllow).(string); ok && c.Request().Method != http.MethodOptions {
			return echo.MethodNotAllowedHandler(c)
		}
		return next(c)
	}
}

// csrfFormField hands the CSRF middleware, which reads only the X-CSRF-Token header, the _csrf
// field of a form body: the body only, never the query string (echo's "form:" lookup reads both,
// and a token in a URL is written to access logs and sent in Referer headers).
func csrfFormField(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Header.Get(echo.HeaderXCSRFToken) != "" || !mutating(c) || !isForm(r) {
			return next(c)
		}
		if err := validForm(c); err != nil {
			return err // what is wrong with the form, not a "missing CSRF token" read from it
		}
		if tok := r.PostForm.Get("_csrf"); tok != "" {
			r.Header.Set(echo.HeaderXCSRFToken, tok)
		}
		return next(c)
	}
}
