// Package ops is Redrive's domain: what an outbox, a consumer lag, a dead letter and a replay are.
// Each subpackage owns one outside system and exposes plain Go types; this root package holds the
// error kinds every layer above translates in one place (web's HTTP error handler).
package ops

import (
	"errors"
	"fmt"
)

// Error kinds. Wrap them with context (fmt.Errorf("outbox %q: %w", name, ops.ErrNotFound)) and test
// with errors.Is; the HTTP layer maps each kind to one status code.
var (
	// ErrNotFound: the named thing (outbox, event, cluster, topic, queue, job) does not exist. → 404
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the caller's input is wrong; the message says what to fix. → 400
	ErrInvalid = errors.New("invalid input")
	// ErrConflict: the request is valid but the current state forbids it. → 409
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: an outside system (database, broker) could not be reached. → 503
	ErrUnavailable = errors.New("unavailable")
	// ErrForbidden: the actor's role or the console's mode does not allow it. → 403
	ErrForbidden = errors.New("forbidden")
)

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
