package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/paths"
	loginpages "github.com/redrive/redrive/views/pages/login"
)

// ErrBadCredentials is SignIn's answer to an unknown user or a wrong password: the two are not
// told apart.
var ErrBadCredentials = errors.New("wrong user name or password")

// ThrottledError is SignIn's answer when too many sign-ins failed for the user or the address.
type ThrottledError struct {
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many failed sign-ins for this user or from this address: try again in %d s",
		int(math.Ceil(e.RetryAfter.Seconds())))
}

// Sessions signs people in and out; web's authenticator implements it.
type Sessions interface {
	// FormLogin reports whether people sign in with the login form (auth.mode basic).
	FormLogin() bool
	// SignedIn reports whether the request already carries a valid identity.
	SignedIn(c echo.Context) bool
	// SignIn checks a user name and password and starts a session (it sets the cookie).
	// Errors: ErrBadCredentials, *ThrottledError, ops.ErrUnavailable when sessions cannot be stored.
	SignIn(c echo.Context, user, password string) error
	// SignOut ends the request's session, if any, clears the cookie and returns where to send the
	// browser next (the login page, or the proxy's sign-out URL).
	SignOut(c echo.Context) (string, error)
}

// Login serves the sign-in page and sign-out.
type Login struct {
	sessions Sessions
	audit    Auditor
	meta     MetaFunc
	log      *slog.Logger
}

// NewLogin wires the session service and the audit log; log receives audit write failures.
func NewLogin(sessions Sessions, audit Auditor, meta MetaFunc, log *slog.Logger) *Login {
	return &Login{sessions: sessions, audit: audit, meta: meta, log: log}
}

// maxUserName caps a typed user name (and what the audit log records of it).
const maxUserName = 128

// Page: GET /login — the form in basic mode; elsewhere (and when already signed in) a redirect.
func (h *Login) Page(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if !h.sessions.FormLogin() || h.sessions.SignedIn(c) {
		return c.Redirect(http.StatusSeeOther, orHome(next))
	}
	return h.form(c, http.StatusOK, "", next, "")
}

func (h *Login) form(c echo.Context, status int, user, next, msg string) error {
	return render(c, status, loginpages.Form(loginpages.Page{Meta: h.meta(c, "Sign in", ""), User: user, Next: next, Error: msg}))
}

// Submit: POST /login (form: username, password, next). Failures answer the form again with 401,
// or 429 and Retry-After when throttled; both are audited as denied (at a bounded rate: the audit
// log given is audit.Throttle, which counts what a flood of them asks past its rate).
func (h *Login) Submit(c echo.Context) error {
	if !h.sessions.FormLogin() {
		return ops.NotFound("there is no login form: auth.mode is not basic")
	}
	user := strings.TrimSpace(c.FormValue("username"))
	password := c.FormValue("password")
	next := safeNext(c.FormValue("next"))
	if len(user) > maxUserName {
		user = user[:maxUserName]
	}
	if user == "" || password == "" {
		return h.form(c, http.StatusBadRequest, user, next, "Enter your user name and password.")
	}
	err := h.sessions.SignIn(c, user, password)
	var throttled *ThrottledError
	switch {
	case errors.As(err, &throttled):
		_ = h.record(c, user, "", audit.OutcomeDenied, "throttled: too many failed sign-ins for this user from this address, "+
			"from this address, or for this user from new addresses")
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(throttled.RetryAfter.Seconds()))))
		return h.form(c, http.StatusTooManyRequests, user, next,
			"Too many failed sign-in attempts. Try again in "+
				strconv.Itoa(int(math.Ceil(throttled.RetryAfter.Seconds())))+" seconds.")
	case errors.Is(err, ErrBadCredentials):
		// A refusal stands whether or not it could be audited (the failure is logged).
		_ = h.record(c, user, "", audit.OutcomeDenied, "wrong user name or password")
		return h.form(c, http.StatusUnauthorized, user, next, "Wrong user name or password.")
	case err != nil:
		return err
	}
	// The session exists now, but its token has only been put in this response's cookie. When the
	// sign-in cannot be audited, that cookie is withdrawn before anything is sent: nobody holds the
	// token, so nobody is signed in unaudited.
	if err := h.record(c, user, ActorOf(c).Role.String(), audit.OutcomeOK, ""); err != nil {
		c.Response().Header().Del(echo.HeaderSetCookie)
		SetActor(c, access.Actor{})
		h.log.Error("sign-in refused: its audit row cannot be written", "err", err, "actor", user)
		return h.form(c, http.StatusServiceUnavailable, user, next,
			"The audit log cannot be written, so you were not signed in. Try again in a moment.")
	}
	return c.Redirect(http.StatusSeeOther, orHome(next))
}

// Logout: POST /logout. A sign-out only takes rights away, so it is never refused for want of an
// audit row: a failure to write it is logged.
func (h *Login) Logout(c echo.Context) error {
	to, err := h.sessions.SignOut(c)
	if err != nil {
		return err
	}
	if actor := ActorOf(c); actor.Name != "anonymous" && actor.Name != "" {
		_ = h.recordAs(c, actor.Name, actor.Role.String(), "auth.logout", audit.OutcomeOK, "")
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// record writes a sign-in; role is "" when the sign-in was refused (no actor was established).
func (h *Login) record(c echo.Context, user, role, outcome, reason string) error {
	return h.recordAs(c, user, role, "auth.login", outcome, reason)
}

// recordAs writes a sign-in or sign-out to the audit log; a failure is logged and returned. The
// store makes odd bytes in the user agent or name storable, so only an unreachable store fails.
func (h *Login) recordAs(c echo.Context, actor, role, action, outcome, reason string) error {
	ip, ua := clientInfo(c)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), 5*time.Second)
	defer cancel()
	err := h.audit.RecordAudit(ctx, audit.Entry{Actor: actor, Role: role, SourceIP: ip, UserAgent: ua,
		Action: action, Target: "session", Outcome: outcome, Reason: reason})
	if err != nil {
		h.log.Error("audit of a sign-in or sign-out failed", "err", err, "action", action, "actor", actor)
	}
	return err
}

// safeNext keeps a post-login destination only when it is a path on this console: no scheme, no
// host, no "//" or "/\" that a browser would read as another host.
func safeNext(next string) string {
	if next == "" || len(next) > 2048 || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.HasPrefix(next, `/\`) || strings.ContainsAny(next, "\r\n\t") {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Path == paths.Login {
		return ""
	}
	return next
}

func orHome(next string) string {
	if next == "" {
		return paths.Overview
	}
	return next
}
