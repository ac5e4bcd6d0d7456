// Package foureyes is the one two-person rule (replay.four_eyes) of every staged action that
// moves messages or offsets: replays, discards, outbox requeues (planned or direct) and offset
// moves. It counts people and volume, not jobs: what one person moved from one source within a
// window, the action asked for included; past the threshold the action waits for a second,
// different person. A token acts for its owner (access.Actor.Person), so two tokens of one person,
// or a person and their token, are one person: neither approves the other.
package foureyes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
)

// Moves is the ledger of what people moved, per source (ops/store keeps it).
type Moves interface {
	// MovedSince is how much person moved from source since since. Errors: ops.ErrUnavailable.
	MovedSince(ctx context.Context, person, source string, since time.Time) (int64, error)
	// RecordMove adds a move to the ledger. Errors: ops.ErrUnavailable.
	RecordMove(ctx context.Context, m Move) error
}

// Move is one action's volume, by one person, from one source.
type Move struct {
	Person string // access.Actor.Person
	Source string // "kafka main topic orders.DLT", "outbox orders", "kafka main group billing"
	Action string // replay.start, replay.approve, outbox.requeue, kafka.offsets.apply
	Ref    string // the job, plan or audit target it moved under
	N      int64  // messages, events or records skipped
}

// Settings are the two-person rule's settings (replay.four_eyes), one for every staged action:
// replays, discards, outbox requeues and offset moves. Past Threshold messages (or records
// skipped) moved by one person from one source within Window, an action waits for a second,
// different person. The zero value (not enabled) needs nobody.
type Settings struct {
	Enabled   bool
	Threshold int64
	Window    time.Duration
}

// Rule is replay.four_eyes over a ledger of moves. The zero value (not enabled) needs nobody.
type Rule struct {
	Settings
	// Moves is the ledger; nil counts each action alone (the volume of one job).
	Moves Moves
	// Turns, when set, is a lock every replica shares (the store's advisory locks): Turn takes it
	// so that an action's check and its record are not interleaved with another's of the same
	// person and source. nil: each replica checks alone, as a single console may.
	Turns Locker
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Locker takes a lock named key that every replica shares, until unlock.
type Locker interface {
	Lock(ctx context.Context, key string) (unlock func(), err error)
}

// Turn makes person's actions on source take turns, from before their Check to after their
// Record: without it, two requests at the same moment, each under the threshold alone, both pass
// a check meant for their sum. An action that cannot be staged another way (a direct outbox
// requeue) takes it; replays have one job per source, offset moves a lock of their own. A rule
// not enabled, or without Turns, takes nothing.
func (r Rule) Turn(ctx context.Context, person, source string) (unlock func(), err error) {
	if !r.Enabled || r.Turns == nil {
		return func() {}, nil
	}
	unlock, err = r.Turns.Lock(ctx, "four-eyes/"+person+"/"+source)
	if errors.Is(err, ops.ErrConflict) { // the lock's own words name its key
		return nil, ops.Conflict("another action of %s's on %s is still being checked against replay.four_eyes; try again in a moment", person, source)
	}
	return unlock, err
}

// Decision is what the rule says of one action.
type Decision struct {
	Needed bool  // a second person must approve it
	Moved  int64 // what the person moved from the source within the window, before it
	Why    string
}

// Check decides whether person's action moving n from source needs a second person: always when
// always says why (a forced replay, an edited message), else when what the person moved from the
// source within the window and n together pass the threshold. Errors: ops.ErrUnavailable (the
// ledger cannot be read: nothing is moved unchecked).
func (r Rule) Check(ctx context.Context, person, source string, n int64, always string) (Decision, error) {
	if !r.Enabled {
		return Decision{}, nil
	}
	if always != "" {
		return Decision{Needed: true, Why: always}, nil
	}
	var moved int64
	if r.Moves != nil {
		var err error
		if moved, err = r.Moves.MovedSince(ctx, person, source, r.now().Add(-r.Window)); err != nil {
			return Decision{}, err
		}
	}
	if moved+n <= r.Threshold {
		return Decision{Moved: moved}, nil
	}
	why := fmt.Sprintf("moves %d, above replay.four_eyes.threshold (%d)", n, r.Threshold)
	if moved > 0 {
		why = fmt.Sprintf("moves %d, and %s moved %d from %s in the last %s: %d, above replay.four_eyes.threshold (%d)",
			n, person, moved, source, ops.FormatAge(r.Window), moved+n, r.Threshold)
	}
	return Decision{Needed: true, Moved: moved, Why: why}, nil
}

// Record adds what an action moved to the ledger (nothing without one, or when n is 0).
func (r Rule) Record(ctx context.Context, m Move) error {
	if r.Moves == nil || m.N <= 0 {
		return nil
	}
	return r.Moves.RecordMove(ctx, m)
}

// ApproveRefused is the rule's one refusal of an approval: by the person who asked for the action
// (whatever name or token they use). author is the person as stored with the action; what says
// what they did ("started this replay", "planned this offset move").
func ApproveRefused(author string, approver access.Actor, what string) error {
	if author != "" && approver.Person() == author {
		return ops.Forbidden("%s %s; a second, different person must approve it (replay.four_eyes)", author, what)
	}
	return nil
}

func (r Rule) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
