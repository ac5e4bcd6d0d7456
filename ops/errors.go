// Package ops is Redrive's domain: what an outbox, a consumer lag, a dead letter and a replay are.
// Each subpackage owns one outside system and exposes plain Go types; this root package holds the
// error kinds every layer above translates in one place (web's HTTP error handler), and the one
// type that separates what a person may read about an error from its internal cause.
package ops

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redrive/redrive/ops/access"
)

// Error kinds. Test them with errors.Is; the HTTP layer maps each kind to one status code.
//
// What a client reads is decided by how the error was made:
//   - an *Error (NotFound, Conflict, Forbidden, Unavailable, or the struct): its Message, never
//     its cause. An outside system's error (pgx's names the user, database, host and port; a
//     broker's its address) goes in Error.Err, which is logged with the request ID;
//   - a *FieldError (Invalid): the field and what to fix;
//   - a kind wrapped with fmt.Errorf (fmt.Errorf("…: %w", ops.ErrNotFound)): the whole text for
//     the 4xx kinds, so only Redrive's own words may be wrapped that way; nothing of it for
//     ErrUnavailable, whose clients read a fixed sentence (see Message).
var (
	// ErrNotFound: the named thing (outbox, event, cluster, topic, queue, job) does not exist. → 404
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the caller's input is wrong; the message says what to fix. → 400
	ErrInvalid = errors.New("invalid input")
	// ErrConflict: the request is valid but the current state forbids it. → 409
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: an outside system (database, broker) could not be reached. → 503
	ErrUnavailable = errors.New("unavailable")
	// ErrForbidden: the actor's role or the console's mode does not allow it, or an outside system
	// refuses the console's own account what the request needs (a RabbitMQ user without read
	// permission on the queue); the message names who lacks which permission. → 403
	ErrForbidden = errors.New("forbidden")
	// ErrLimited: the request is valid, but the person (or everyone) has as many of its kind
	// running as a limit allows (exports, scans); the message names the limit. → 429
	ErrLimited = errors.New("too many at once")
	// ErrRefused marks an ErrForbidden that is a rule's answer to what a person asked — a role,
	// the four-eyes rule, a limit, an allowed destination — as opposed to an outside system
	// refusing the console's own account. Forbidden and Require make them; the web layer audits
	// each one that reaches it as a denied request, once (see RefusalAudited).
	ErrRefused = errors.New("refused")
	// errRefusalAudited marks a refusal whose denied row the code that decided it wrote already.
	errRefusalAudited = errors.New("refusal audited")
)

// Error is an error of one kind with a message for a person: Message says what happened and,
// where it helps, what to do, in words the console may show whoever made the request (no driver,
// host, user, database or Go type text). Err is the internal cause: it is in Error() — the log's
// text, and what tests read — and never in a response.
type Error struct {
	Kind    error  // ErrNotFound, ErrInvalid, ErrConflict, ErrUnavailable or ErrForbidden
	Message string // for a person
	Err     error  // the internal cause; may be nil
	// refused: a rule's refusal of a person's request (ErrRefused), made by Forbidden.
	refused bool
}

// Error is the message followed by the cause: for the log, not for a client.
func (e *Error) Error() string {
	if e.Err == nil {
		return e.Message
	}
	return e.Message + ": " + e.Err.Error()
}

// Unwrap makes errors.Is and errors.As see both the kind and the cause.
func (e *Error) Unwrap() []error {
	out := []error{e.Kind}
	if e.refused {
		out = append(out, ErrRefused)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// NotFound is an ErrNotFound whose message is format's: "outbox \"x\" is not configured".
func NotFound(format string, a ...any) error {
	return &Error{Kind: ErrNotFound, Message: fmt.Sprintf(format, a...)}
}

// Conflict is an ErrConflict saying why the current state forbids the request.
func Conflict(format string, a ...any) error {
	return &Error{Kind: ErrConflict, Message: fmt.Sprintf(format, a...)}
}

// Forbidden is an ErrForbidden saying what a rule does not allow the person asking (Require makes
// the role ones); it is an ErrRefused, audited as a denied request where it reaches the web layer.
func Forbidden(format string, a ...any) error {
	return &Error{Kind: ErrForbidden, Message: fmt.Sprintf(format, a...), refused: true}
}

// RefusalAudited marks a refusal whose denied audit row the code that decided it has written, so
// that it is not written twice. It keeps err's kinds and message.
func RefusalAudited(err error) error {
	if err == nil {
		return nil
	}
	return auditedRefusal{err}
}

// IsUnauditedRefusal reports whether err is a rule's refusal (ErrRefused) whose denied row is
// still to be written.
func IsUnauditedRefusal(err error) bool {
	return errors.Is(err, ErrRefused) && !errors.Is(err, errRefusalAudited)
}

type auditedRefusal struct{ error }

func (a auditedRefusal) Unwrap() []error { return []error{a.error, errRefusalAudited} }

// Require is nil when actor's role includes need, else an ErrForbidden whose message says what
// needs which role: Require(actor, access.Admin, "forcing a replay past the consumer's inbox") →
// "forcing a replay past the consumer's inbox needs the admin role". A use case that authorizes
// calls it (or actor.Can, when it says no in its own words).
func Require(actor access.Actor, need access.Role, doing string) error {
	if actor.Can(need) {
		return nil
	}
	return Forbidden("%s needs the %s role", doing, need)
}

// Limited is an ErrLimited saying which limit was reached and what to do.
func Limited(format string, a ...any) error {
	return &Error{Kind: ErrLimited, Message: fmt.Sprintf(format, a...)}
}

// Unavailable is an ErrUnavailable saying which outside system did not answer, or what could not
// be done for it; cause, the system's own error, is kept for the log. An adapter whose cause
// already is an ErrUnavailable with a message (a connection pool's "is busy: …, raise max_conns")
// wraps it with fmt.Errorf instead, so that message, which says more, is the one shown.
func Unavailable(cause error, format string, a ...any) error {
	return &Error{Kind: ErrUnavailable, Message: fmt.Sprintf(format, a...), Err: cause}
}

// Invalid returns an ErrInvalid whose message names what to fix, e.g. Invalid("limit", "must be 1..500").
func Invalid(field, problem string) error {
	return &FieldError{Field: field, Problem: problem}
}

// FieldError is an ErrInvalid about one named input field or parameter.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Problem) }

// Is makes errors.Is(err, ErrInvalid) true for every FieldError.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// Fixed sentences for errors that carry no message for a person.
const (
	unavailableMessage = "a service Redrive depends on did not answer; try again in a moment " +
		"(the console's log has the details under this request's ID)"
	internalMessage = "internal error (the console's log has the details under this request's ID)"
)

// Message is what a person may read about err:
//   - the Message of the first *Error in its chain (the outermost);
//   - else the field and problem of a *FieldError;
//   - else, for ErrNotFound, ErrInvalid, ErrConflict and ErrForbidden wrapped with fmt.Errorf
//     around Redrive's own words, those words: err's text from after the kind ("…: conflict: "),
//     or before it when the kind ends the text ("…: not found"), so that neither the kind's own
//     word nor the operation context an adapter wrapped around it ("rabbitmq main: browse
//     //invoices: ") reaches a person;
//   - else (ErrUnavailable without a message, anything unclassified) a fixed sentence: the cause
//     of those is an outside system's or Go's text, which is for the log.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Error()
	}
	if errors.Is(err, ErrUnavailable) {
		return unavailableMessage
	}
	for _, kind := range []error{ErrNotFound, ErrInvalid, ErrConflict, ErrForbidden} {
		if errors.Is(err, kind) {
			return ownWords(err.Error(), kind.Error())
		}
	}
	return internalMessage
}

// ownWords is text without the kind word and what came before it: "browse //q: conflict: queue q
// has a consumer" → "queue q has a consumer"; "replay job j is done: conflict" → "replay job j is
// done". Text that is only the kind stays as it is.
func ownWords(text, kind string) string {
	if i := strings.Index(text, kind+": "); i >= 0 && i+len(kind)+2 < len(text) {
		return text[i+len(kind)+2:]
	}
	if s, ok := strings.CutSuffix(text, ": "+kind); ok && s != "" {
		return s
	}
	return text
}
