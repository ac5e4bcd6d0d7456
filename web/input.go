package web

import (
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/ops"
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
		}
		return next(c)
	}
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
		switch {
		case strings.Contains(route, "/silences/"):
			return "silence id"
		case strings.Contains(route, "/offsets/"):
			return "offset plan id"
		case strings.Contains(route, paths.Archive+"/"):
			return "archived message id"
		case strings.Contains(route, "/events/"):
			return "event id"
		case strings.Contains(route, "/plans/"):
			return "plan id"
		case strings.Contains(route, paths.Replays+"/"):
			return "replay id"
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
		if r.Header.Get(echo.HeaderXCSRFToken) != "" || !mutating(c) {
			return next(c)
		}
		mt, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
		if mt != echo.MIMEApplicationForm && mt != echo.MIMEMultipartForm {
			return next(c)
		}
		if r.PostForm == nil {
			_ = r.ParseMultipartForm(32 << 20) // what echo's form lookup did; BodyLimit caps the body
		}
		if tok := r.PostForm.Get("_csrf"); tok != "" {
			r.Header.Set(echo.HeaderXCSRFToken, tok)
		}
		return next(c)
	}
}
