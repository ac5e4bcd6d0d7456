package ops

import (
	"context"
	"fmt"
	"time"
)

// BusyError is the error of a call that could not get a connection within the bound. It wraps
// ErrUnavailable (→ 503) and, when the caller's own deadline was what ran out,
// context.DeadlineExceeded too. Its text names no host, user or database.
type BusyError struct {
	Name     string        // what the pool serves, as the operator knows it: `outbox "orders"`
	Key      string        // the configuration key that raises the pool size
	MaxConns int           // the pool size
	InUse    int           // connections checked out when the wait ended
	Waited   time.Duration // how long the call waited
	// Full is true when every connection was in use; false when the wait went on a connection
	// that was still being established (the database is slow to accept connections).
	Full bool
	// CallerDeadline is true when the caller's context ended before the pool's own bound.
	CallerDeadline bool
}

func (e *BusyError) Error() string {
	waited := e.Waited.Round(100 * time.Millisecond)
	switch {
	case e.Full && e.MaxConns == 1:
		return fmt.Sprintf("%s is busy: its only connection is in use for %s; try again or raise %s",
			e.Name, waited, e.Key)
	case e.Full:
		return fmt.Sprintf("%s is busy: all %d connections are in use for %s; try again or raise %s",
			e.Name, e.MaxConns, waited, e.Key)
	}
	return fmt.Sprintf("%s did not give a connection within %s (%d of %d in use, the others still connecting); try again",
		e.Name, waited, e.InUse, e.MaxConns)
}

// Is makes errors.Is(err, ErrUnavailable) true, and errors.Is(err, context.DeadlineExceeded)
// true when the caller's deadline is what ended the wait.
func (e *BusyError) Is(target error) bool {
	return target == ErrUnavailable || (e.CallerDeadline && target == context.DeadlineExceeded)
}

// As makes errors.As(err, **Error) find the busy error's text as the message a person reads:
// it names the pool and its setting, never a host, user or database.
func (e *BusyError) As(target any) bool {
	if t, ok := target.(**Error); ok {
		*t = &Error{Kind: ErrUnavailable, Message: e.Error()}
		return true
	}
	return false
}
