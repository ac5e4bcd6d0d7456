package foureyes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
)

type ledger struct{ moves []Move }

func (l *ledger) MovedSince(_ context.Context, person, source string, _ time.Time) (int64, error) {
	var n int64
	for _, m := range l.moves {
		if m.Person == person && m.Source == source {
			n += m.N
		}
	}
	return n, nil
}

func (l *ledger) RecordMove(_ context.Context, m Move) error {
	l.moves = append(l.moves, m)
	return nil
}

// TestRuleCountsPeopleAndVolume: five one-message actions of one person from one source pass the
// threshold of four together; another person, another source, are counted apart; a forced action
// always waits; the rule off needs nobody.
func TestRuleCountsPeopleAndVolume(t *testing.T) {
	ctx := context.Background()
	l := &ledger{}
	r := Rule{Settings: Settings{Enabled: true, Threshold: 4, Window: time.Hour}, Moves: l}
	for i := range 5 {
		d, err := r.Check(ctx, "otto", "outbox orders", 1, "")
		if err != nil {
			t.Fatal(err)
		}
		if d.Needed != (i == 4) {
			t.Fatalf("action %d: %+v", i+1, d)
		}
		if !d.Needed {
			_ = r.Record(ctx, Move{Person: "otto", Source: "outbox orders", N: 1})
		} else if !strings.Contains(d.Why, "otto moved 4 from outbox orders in the last 1 h: 5") {
			t.Errorf("why: %q", d.Why)
		}
	}
	for _, c := range []struct{ person, source string }{{"ada", "outbox orders"}, {"otto", "outbox billing"}} {
		if d, _ := r.Check(ctx, c.person, c.source, 4, ""); d.Needed {
			t.Errorf("%s on %s counted otto's outbox orders: %+v", c.person, c.source, d)
		}
	}
	if d, _ := r.Check(ctx, "ada", "outbox orders", 1, "forced past the consumer's inbox"); !d.Needed {
		t.Error("a forced action did not wait")
	}
	if d, _ := (Rule{Settings: Settings{Threshold: 0}, Moves: l}).Check(ctx, "otto", "outbox orders", 100, "forced"); d.Needed {
		t.Error("the rule off held an action")
	}
}

func TestApproveRefusedComparesPeople(t *testing.T) {
	ottoToken := access.Actor{Name: "token:otto-ci", Role: access.Operator, Owner: "otto"}
	for _, a := range []access.Actor{{Name: "otto", Role: access.Admin}, ottoToken} {
		if err := ApproveRefused("otto", a, "started this replay"); !errors.Is(err, ops.ErrRefused) {
			t.Errorf("%+v approving otto's: %v", a, err)
		}
	}
	if err := ApproveRefused("otto", access.Actor{Name: "token:deploy", Role: access.Operator}, "started this replay"); err != nil {
		t.Errorf("a token of nobody's approving otto's: %v", err)
	}
}

// busyLocks answers every lock as the store does when another session held it past the wait.
type busyLocks struct{ keys []string }

func (b *busyLocks) Lock(_ context.Context, key string) (func(), error) {
	b.keys = append(b.keys, key)
	return nil, ops.Conflict("lock %q: held by another session for longer than 10s", key)
}

// Turn takes one lock per person and source, only when the rule is on, and says a busy turn in
// the user's words, not the lock's key.
func TestTurn(t *testing.T) {
	ctx := context.Background()
	locks := &busyLocks{}
	off := Rule{Turns: locks}
	unlock, err := off.Turn(ctx, "otto", "outbox orders")
	if err != nil || len(locks.keys) != 0 {
		t.Fatalf("rule off: %v, %d locks taken; want none", err, len(locks.keys))
	}
	unlock()
	on := Rule{Settings: Settings{Enabled: true, Threshold: 4, Window: time.Hour}, Turns: locks}
	_, err = on.Turn(ctx, "otto", "outbox orders")
	if !errors.Is(err, ops.ErrConflict) || strings.Contains(ops.Message(err), "lock") ||
		!strings.Contains(ops.Message(err), "otto") || !strings.Contains(ops.Message(err), "try again") {
		t.Fatalf("busy turn: %v (%q)", err, ops.Message(err))
	}
	if want := []string{"four-eyes/otto/outbox orders"}; strings.Join(locks.keys, ",") != want[0] {
		t.Fatalf("locks taken %q, want %q", locks.keys, want)
	}
}
