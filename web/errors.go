package web

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
	"github.com/redrive/redrive/views/pages/errorpage"
)

// apiError is the JSON error body: {"error":{"code","message","request_id"}}. The message is
// ops.Message's: what a person may read, never an outside system's error text.
type apiError struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"request_id,omitempty"` // the log line with the internal error has it
	} `json:"error"`
}

// classify maps an error to a status, a stable code and a message safe to show (ops.Message).
// The error kinds come first: an *ops.Error may wrap the echo error it replaces (a CSRF refusal).
func classify(err error) (int, string, string) {
	var he *echo.HTTPError
	switch {
	case errors.Is(err, ops.ErrInvalid):
		return http.StatusBadRequest, "invalid", ops.Message(err)
	case errors.Is(err, ops.ErrNotFound):
		return http.StatusNotFound, "not_found", ops.Message(err)
	case errors.Is(err, ops.ErrConflict):
		return http.StatusConflict, "conflict", ops.Message(err)
	case errors.Is(err, ops.ErrForbidden):
		return http.StatusForbidden, "forbidden", ops.Message(err)
	case errors.Is(err, ops.ErrLimited):
		return http.StatusTooManyRequests, "too_many_requests", ops.Message(err)
	case errors.Is(err, ops.ErrUnavailable):
		// Which system, and what to do, when the error says so in words for a person (a busy pool,
		// an unreachable broker by its name); the system's own error is for the log.
		return http.StatusServiceUnavailable, "unavailable", ops.Message(err)
	case errors.As(err, &he):
		// The HTTP-level statuses no domain kind means: echo's own (404 and 405 of the router, 413
		// of the body limit), the auth middleware's 401 and decodeJSON's 413 and 415. Everything
		// else, this layer's 403s and 404s included, is an ops error. Texts written for a person.
		msg, _ := he.Message.(string)
		if msg == "" || msg == http.StatusText(he.Code) {
			msg = routerText(he.Code)
		}
		return he.Code, codeFor(he.Code), msg
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "timeout", "the request took longer than request_timeout"
	}
	return http.StatusInternalServerError, "internal", ops.Message(err)
}

// routerText is what an HTTP-level error that came with no words of its own says: the router's
// 404 and 405 tell what to do instead of repeating the title ("Not Found").
func routerText(status int) string {
	switch status {
	case http.StatusNotFound:
		return "nothing is at this address: check it for a typo, or start from the overview (the API's paths are listed at " + paths.OpenAPI + ")"
	case http.StatusMethodNotAllowed:
		return "this address does not take that method: a page is read with GET, an action is a form's POST (the API's methods are listed at " + paths.OpenAPI + ")"
	}
	return http.StatusText(status)
}

func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusConflict:
		return "conflict"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusUnsupportedMediaType:
		return "unsupported_media_type"
	case http.StatusServiceUnavailable:
		return "unavailable"
	}
	if status >= 500 {
		return "internal"
	}
	return "error"
}

func errorHandler(log *slog.Logger, opts Options) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status, code, msg := classify(err)
		if status == http.StatusTooManyRequests && c.Response().Header().Get("Retry-After") == "" {
			c.Response().Header().Set("Retry-After", "5") // a slot is freed when a running one ends
		}
		reqID := c.Response().Header().Get(echo.HeaderXRequestID)
		logInternal(log, c, err, status, msg, reqID)
		var werr error
		switch {
		case c.Request().Method == http.MethodHead:
			werr = c.NoContent(status)
		case strings.HasPrefix(c.Request().URL.Path, paths.APIPrefix) || c.Request().URL.Path == paths.Readyz:
			var body apiError
			body.Error.Code, body.Error.Message, body.Error.RequestID = code, msg, reqID
			werr = c.JSON(status, body)
		case c.Request().Header.Get("HX-Request") == "true":
			werr = renderTo(c, status, errorpage.Fragment(status, http.StatusText(status), msg, reqID))
		default:
			token, _ := c.Get(csrfKey).(string)
			meta := layout.Meta{Title: http.StatusText(status), CSRFToken: token, AuthNone: opts.AuthNone,
				ReadOnly: opts.ReadOnly, Version: opts.Version}
			werr = renderTo(c, status, errorpage.Page(meta, status, http.StatusText(status), msg, reqID))
		}
		if werr != nil {
			log.Error("writing error response", "err", werr, "request_id", reqID)
		}
	}
}

func renderTo(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	// The request's context may already be cancelled (timeout middleware) when the error page renders.
	if err := comp.Render(context.WithoutCancel(c.Request().Context()), &buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, components.VisibleHTML(buf.Bytes()))
}

// logInternal writes the internal error of a response whose message does not carry it (a failed
// dependency, an internal error, an *ops.Error with a cause) with the request ID the client was
// given, so that one can be found from the other.
func logInternal(log *slog.Logger, c echo.Context, err error, status int, msg, reqID string) {
	var oe *ops.Error
	internal := err.Error()
	if internal == msg || (status < 500 && !(errors.As(err, &oe) && oe.Err != nil)) {
		return // the response says it all
	}
	level := slog.LevelInfo
	switch {
	case status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout:
		level = slog.LevelWarn
	case status >= 500:
		level = slog.LevelError
	}
	log.Log(c.Request().Context(), level, "request failed", "status", status, "err", internal, "request_id", reqID,
		"method", c.Request().Method, "uri", c.Request().RequestURI)
}
