package audit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/redrive/redrive/ops"
)

// txLog is memLog whose in-transaction write can fail on its own.
type txLog struct {
	memLog
	inTxErr error
}

func (m *txLog) RecordAuditIn(ctx context.Context, _ Tx, e Entry) error {
	if m.inTxErr != nil {
		return m.inTxErr
	}
	return m.RecordAudit(ctx, e)
}

func outcomes(rows []Entry) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Outcome)
	}
	return out
}

func TestChangeInTx(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	change := func(n int64, err error) (func(ctx context.Context, commit Commit) (int64, error), *bool) {
		ran := new(bool)
		return func(ctx context.Context, commit Commit) (int64, error) {
			*ran = true
			if err != nil {
				return 0, err
			}
			if cerr := commit(ctx, nil, n); cerr != nil {
				return 0, cerr // rolled back
			}
			return n, nil
		}, ran
	}
	base := Entry{Action: "outbox.requeue", Target: "outbox/orders", Actor: "alice"}

	t.Run("Made", func(t *testing.T) {
		log := &txLog{}
		run, _ := change(3, nil)
		n, err := ChangeInTx(context.Background(), log, quiet, base, run)
		if n != 3 || err != nil || len(log.rows) != 2 || log.rows[1].Outcome != OutcomeOK || *log.rows[1].Count != 3 ||
			log.rows[1].Detail["intent_id"] != int64(1) {
			t.Fatalf("n %d, err %v, rows %+v", n, err, log.rows)
		}
	})
	t.Run("NoIntentNoChange", func(t *testing.T) {
		log := &txLog{memLog: memLog{intentErr: errors.New("connection refused")}}
		run, ran := change(3, nil)
		n, err := ChangeInTx(context.Background(), log, quiet, base, run)
		if n != 0 || !errors.Is(err, ops.ErrUnavailable) || *ran {
			t.Fatalf("n %d, err %v, ran %v: want nothing attempted", n, err, *ran)
		}
	})
	t.Run("OutcomeLostRollsBack", func(t *testing.T) {
		log := &txLog{inTxErr: errors.New("store went away")}
		run, _ := change(3, nil)
		n, err := ChangeInTx(context.Background(), log, quiet, base, run)
		if n != 0 || !errors.Is(err, ops.ErrUnavailable) || ops.Message(err) != "the audit log cannot be written, so nothing was changed" {
			t.Fatalf("n %d, err %v (%q)", n, err, ops.Message(err))
		}
		if got := outcomes(log.rows); len(got) != 2 || got[1] != OutcomeFailed {
			t.Fatalf("rows %v: want started, failed", got)
		}
	})
	t.Run("ChangeFails", func(t *testing.T) {
		log := &txLog{}
		cause := ops.Conflict("event 7 is not DEAD")
		run, _ := change(0, cause)
		_, err := ChangeInTx(context.Background(), log, quiet, base, run)
		if !errors.Is(err, cause) || errors.Is(err, ops.ErrUnavailable) {
			t.Fatalf("err %v: want the change's own error", err)
		}
		if got := outcomes(log.rows); len(got) != 2 || got[1] != OutcomeFailed || log.rows[1].Detail["error"] == nil {
			t.Fatalf("rows %+v: want started, failed with the error", log.rows)
		}
	})
	t.Run("NoLog", func(t *testing.T) {
		run, ran := change(3, nil)
		if _, err := ChangeInTx(context.Background(), nil, quiet, base, run); !errors.Is(err, ops.ErrUnavailable) || *ran {
			t.Fatalf("err %v, ran %v", err, *ran)
		}
	})
}
