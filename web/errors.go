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

// apiError is the JSON error body: {"error":{"code","message"}}.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// classify maps an error to a status, a stable code and a message safe to show.
func classify(err error) (int, string, string) {
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		if he.Code == http.StatusForbidden && strings.Contains(strings.ToLower(msg), "csrf") {
			msg = "missing or invalid CSRF token: reload the page and try again"
		}
		if he.Code == http.StatusBadRequest && strings.Contains(msg, "csrf") {
			return http.StatusForbidden, "forbidden", "missing CSRF token: reload the page and try again"
		}
		return he.Code, codeFor(he.Code), msg
	case errors.Is(err, ops.ErrInvalid):
		return http.StatusBadRequest, "invalid", errMessage(err)
	case errors.Is(err, ops.ErrNotFound):
		return http.StatusNotFound, "not_found", errMessage(err)
	case errors.Is(err, ops.ErrConflict):
		return http.StatusConflict, "conflict", errMessage(err)
	case errors.Is(err, ops.ErrForbidden):
		return http.StatusForbidden, "forbidden", errMessage(err)
	case errors.Is(err, ops.ErrUnavailable):
		// An outside system is down: the operator needs its error to act on it.
		return http.StatusServiceUnavailable, "unavailable", err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "timeout", "the request took longer than request_timeout"
	}
	return http.StatusInternalServerError, "internal", "internal error"
}

// errMessage strips the kind's own text ("…: not found") when the wrapped message says it better.
func errMessage(err error) string {
	var fe *ops.FieldError
	if errors.As(err, &fe) {
		return fe.Error()
	}
	return err.Error()
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
		reqID := c.Response().Header().Get(echo.HeaderXRequestID)
		if status >= 500 && status != http.StatusServiceUnavailable {
			log.Error("request failed", "err", err, "request_id", reqID, "uri", c.Request().RequestURI)
		}
		var werr error
		switch {
		case c.Request().Method == http.MethodHead:
			werr = c.NoContent(status)
		case strings.HasPrefix(c.Request().URL.Path, paths.APIPrefix) || c.Request().URL.Path == paths.Readyz:
			var body apiError
			body.Error.Code, body.Error.Message = code, msg
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
