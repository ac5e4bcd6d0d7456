package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/redrive/redrive/ops"
)

// memLog is an audit log in memory whose writes can be made to fail.
type memLog struct {
	mu                    sync.Mutex
	rows                  []Entry
	intentErr, outcomeErr error
}

func (m *memLog) RecordIntent(_ context.Context, e Entry) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.intentErr != nil {
		return 0, m.intentErr
	}
	e.Outcome = OutcomeStarted
	m.rows = append(m.rows, e)
	return int64(len(m.rows)), nil
}

func (m *memLog) RecordAudit(_ context.Context, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.outcomeErr != nil {
		return m.outcomeErr
	}
	m.rows = append(m.rows, e)
	return nil
}

func newWriter(log Log) (*Writer, *bytes.Buffer) {
	var buf bytes.Buffer
	return New(log, slog.New(slog.NewTextHandler(&buf, nil))), &buf
}

// No intent row, no change: the caller is told, in words for a person, and the cause is kept.
func TestIntentThatCannotBeWrittenStopsTheChange(t *testing.T) {
	cause := errors.New("dial tcp 10.1.2.3:5432: connection refused")
	w, _ := newWriter(&memLog{intentErr: cause})
	done, err := w.Intend(context.Background(), Entry{Action: "replay.start"})
	if done != nil || !errors.Is(err, ops.ErrUnavailable) || !errors.Is(err, cause) {
		t.Fatalf("done %v, err %v; want no done and an ops.ErrUnavailable wrapping the cause", done != nil, err)
	}
	if got, want := ops.Message(err), "the audit log cannot be written, so nothing was changed (replay.start)"; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
}

// A change that was made, whose outcome row cannot be written, stays a success: Done returns
// nothing to fail with; the failure is logged and counted.
func TestOutcomeThatCannotBeWrittenIsLoggedAndCounted(t *testing.T) {
	log := &memLog{}
	w, buf := newWriter(log)
	ctx := ops.WithClient(context.Background(), ops.Client{Addr: "192.0.2.7", UserAgent: "curl/8"})
	done, err := w.Intend(ctx, Entry{Actor: "otto", Action: "test.outcome_lost", Target: "x", Detail: map[string]any{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	before := counted(t, "test.outcome_lost")
	log.outcomeErr = errors.New("the store went away")
	done(nil, nil) // the change succeeded; nothing here can turn it into a failure
	if got := counted(t, "test.outcome_lost"); got != before+1 {
		t.Fatalf("failures counted %v, want %v", got, before+1)
	}
	if line := buf.String(); !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "action=test.outcome_lost") ||
		!strings.Contains(line, "the store went away") || !strings.Contains(line, "actor=otto") {
		t.Fatalf("log: %s", line)
	}
	if len(log.rows) != 1 || log.rows[0].Outcome != OutcomeStarted || log.rows[0].SourceIP != "192.0.2.7" ||
		log.rows[0].UserAgent != "curl/8" {
		t.Fatalf("rows %+v: want the intent alone, with where the request came from", log.rows)
	}
}

// The outcome names its intent; a failed change carries its error; a detail given replaces the
// intent's.
func TestOutcomeRows(t *testing.T) {
	log := &memLog{}
	w, buf := newWriter(log)
	ctx := context.Background()
	done, err := w.Intend(ctx, Entry{Action: "a", Detail: map[string]any{"plan_id": "p"}})
	if err != nil {
		t.Fatal(err)
	}
	done(nil, nil)
	done2, _ := w.Intend(ctx, Entry{Action: "b", Detail: map[string]any{"plan_id": "p", "big": true}})
	done2(ops.Conflict("broker said no"), map[string]any{"copied": 3})
	if len(log.rows) != 4 || buf.Len() != 0 {
		t.Fatalf("%d rows, log %q", len(log.rows), buf.String())
	}
	ok, failed := log.rows[1], log.rows[3]
	if ok.Outcome != OutcomeOK || ok.Detail["intent_id"] != int64(1) || ok.Detail["plan_id"] != "p" {
		t.Errorf("ok row %+v", ok)
	}
	if failed.Outcome != OutcomeFailed || failed.Detail["intent_id"] != int64(3) || failed.Detail["error"] != "broker said no" ||
		failed.Detail["copied"] != 3 || failed.Detail["big"] != nil {
		t.Errorf("failed row %+v", failed)
	}
	// A nil Writer, or one without a log, writes nothing and never fails (tests, unaudited tools).
	var none *Writer
	if d, err := none.Intend(ctx, Entry{}); err != nil || d == nil {
		t.Fatal(err)
	}
	New(nil, nil).Record(ctx, Entry{})
}

func counted(t *testing.T, action string) float64 {
	t.Helper()
	var m dto.Metric
	if err := failures.WithLabelValues(action).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// Something that may end partly done (an export) ends with its own outcome and count, its detail
// added to the intent's; refused, it does not start; a lost outcome row is counted like Done's.
func TestBeginEndsWithItsOutcomeAndCount(t *testing.T) {
	log := &memLog{}
	w, buf := newWriter(log)
	ctx := context.Background()
	end, err := w.Begin(ctx, Entry{Action: "test.export", Detail: map[string]any{"format": "csv"}})
	if err != nil {
		t.Fatal(err)
	}
	n := int64(7)
	end(OutcomePartial, &n, ops.Conflict("the client went away"), map[string]any{"scanned": 10})
	if len(log.rows) != 2 || buf.Len() != 0 {
		t.Fatalf("%d rows, log %q", len(log.rows), buf.String())
	}
	if r := log.rows[1]; r.Outcome != OutcomePartial || r.Count == nil || *r.Count != 7 || r.Detail["intent_id"] != int64(1) ||
		r.Detail["format"] != "csv" || r.Detail["scanned"] != 10 || r.Detail["error"] != "the client went away" {
		t.Errorf("partial row %+v", r)
	}

	if _, err := w.Begin(ctx, Entry{Action: "test.export"}); err != nil {
		t.Fatal(err)
	}
	refused, err := New(&memLog{intentErr: errors.New("down")}, nil).Begin(ctx, Entry{Action: "test.export"})
	if refused != nil || ops.Message(err) != "the audit log cannot be written, so nothing was done (test.export)" {
		t.Fatalf("refused: %v", err)
	}

	end, _ = w.Begin(ctx, Entry{Action: "test.export_lost"})
	before := counted(t, "test.export_lost")
	log.outcomeErr = errors.New("the store went away")
	end(OutcomeOK, &n, nil, nil)
	if got := counted(t, "test.export_lost"); got != before+1 {
		t.Fatalf("failures counted %v, want %v", got, before+1)
	}
}

// A failed outcome's detail.error is what a person may read of the cause (ops.Message), never
// its text: the audit log is every viewer's to read, and a driver's error names the database, a
// broker's its host, a webhook's its URL and token. The QA's NUL byte left "ERROR: unsupported
// Unicode escape sequence (SQLSTATE 22P05)" there.
func TestFailedOutcomeCarriesNoDriverText(t *testing.T) {
	driver := errors.New("ERROR: unsupported Unicode escape sequence (SQLSTATE 22P05)")
	for _, tc := range []struct {
		name  string
		cause error
		want  string
	}{
		{"Unavailable", ops.Unavailable(driver, "Redrive's database did not answer (silence: create)"),
			"Redrive's database did not answer (silence: create)"},
		{"Wrapped", fmt.Errorf("store: %w", ops.Unavailable(driver, "the store did not answer")), "the store did not answer"},
		{"Plain", fmt.Errorf("dial tcp 10.0.0.7:5432: %w", driver), ops.Message(driver)},
		{"Invalid", ops.Invalid("ids", "at most 500"), "ids: at most 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &memLog{}
			w, _ := newWriter(log)
			done, err := w.Intend(context.Background(), Entry{Action: "a"})
			if err != nil {
				t.Fatal(err)
			}
			done(tc.cause, nil)
			got, _ := log.rows[1].Detail["error"].(string)
			if got != tc.want || strings.Contains(got, "SQLSTATE") || strings.Contains(got, "10.0.0.7") {
				t.Fatalf("detail.error %q; want %q", got, tc.want)
			}
		})
	}
}
