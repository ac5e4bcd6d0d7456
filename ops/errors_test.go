package ops

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redrive/redrive/ops/access"
)

// Message is what a person reads: the safe message of an *Error (never its cause), a field
// error's field and problem, Redrive's own words around a 4xx kind, a fixed sentence otherwise.
func TestMessage(t *testing.T) {
	driver := errors.New("failed to connect to user=redrive database=orders host=10.1.2.3 port=5432")
	for _, tc := range []struct {
		name string
		err  error
		kind error
		want string
	}{
		{"NotFound", NotFound("outbox %q is not configured", "x"), ErrNotFound, `outbox "x" is not configured`},
		{"Wrapped", fmt.Errorf("rabbitmq main: browse //invoices: %w", Conflict("queue %q has a consumer", "invoices")),
			ErrConflict, `queue "invoices" has a consumer`},
		{"UnavailableWithCause", Unavailable(driver, "the database of outbox %q did not answer", "orders"),
			ErrUnavailable, `the database of outbox "orders" did not answer`},
		{"UnavailableBare", fmt.Errorf("save plan: %w: %w", ErrUnavailable, driver), ErrUnavailable, unavailableMessage},
		{"Field", fmt.Errorf("plan: %w", Invalid("limit", "must be 1..500")), ErrInvalid, "limit: must be 1..500"},
		{"OwnWords", fmt.Errorf("replay job %s is done: %w", "job_1", ErrConflict), ErrConflict, "replay job job_1 is done"},
		{"KindFirst", fmt.Errorf("%w: queue %s cannot be read whole now", ErrConflict, "q"), ErrConflict, "queue q cannot be read whole now"},
		{"KindInsideAnAdaptersContext", fmt.Errorf("rabbitmq main: browse //invoices: %w",
			fmt.Errorf("%w: quorum queue %q has a delivery limit", ErrConflict, "invoices")), ErrConflict, `quorum queue "invoices" has a delivery limit`},
		{"OnlyTheKind", ErrNotFound, ErrNotFound, "not found"},
		{"Forbidden", Forbidden("%s started this replay", "alice"), ErrForbidden, "alice started this replay"},
		{"Unclassified", fmt.Errorf("render: %w", driver), nil, internalMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Message(tc.err); got != tc.want {
				t.Errorf("Message = %q, want %q", got, tc.want)
			}
			if tc.kind != nil && !errors.Is(tc.err, tc.kind) {
				t.Errorf("%v is not %v", tc.err, tc.kind)
			}
		})
	}
	// The cause stays in the error's text (the log's) and in its chain.
	err := Unavailable(driver, "the store did not answer")
	if !errors.Is(err, driver) || err.Error() != "the store did not answer: "+driver.Error() {
		t.Fatalf("%q", err)
	}
}

func TestRequire(t *testing.T) {
	op := access.Actor{Name: "otto", Role: access.Operator}
	if err := Require(op, access.Operator, "requeueing"); err != nil {
		t.Fatalf("operator requiring operator: %v", err)
	}
	err := Require(op, access.Admin, "forcing a replay past the consumer's inbox")
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("operator requiring admin: %v, want ErrForbidden", err)
	}
	if got, want := Message(err), "forcing a replay past the consumer's inbox needs the admin role"; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	if err := Require(access.Anonymous, access.Viewer, "reading"); !errors.Is(err, ErrForbidden) {
		t.Fatalf("anonymous requiring viewer: %v", err)
	}
	if err := Require(access.Anonymous, access.Public, "reading /healthz"); err != nil {
		t.Fatalf("public needs nothing: %v", err)
	}
}
