package search

import (
	"context"
	"errors"
	"testing"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
)

// memLog is an audit log in memory: intents and outcomes as written.
type memLog struct {
	rows []audit.Entry
	fail error
}

func (m *memLog) RecordAudit(_ context.Context, e audit.Entry) error {
	m.rows = append(m.rows, e)
	return nil
}

func (m *memLog) RecordIntent(_ context.Context, e audit.Entry) (int64, error) {
	if m.fail != nil {
		return 0, m.fail
	}
	m.rows = append(m.rows, e)
	return int64(len(m.rows)), nil
}

func TestExportsRoleAndAudit(t *testing.T) {
	ctx := context.Background()
	viewer, operator := access.Actor{Name: "vera", Role: access.Viewer}, access.Actor{Name: "otto", Role: access.Operator}
	for _, tc := range []struct {
		minRole string
		want    access.Role
	}{{"", access.Operator}, {"viewer", access.Viewer}, {"admin", access.Admin}, {"nonsense", access.Operator}} {
		if got := NewExports(tc.minRole, nil).MinRole(); got != tc.want {
			t.Errorf("min_role %q: %v, want %v", tc.minRole, got, tc.want)
		}
	}
	if (*Exports)(nil).MinRole() != access.Operator {
		t.Error("nil Exports must say operator")
	}

	log := &memLog{}
	x := NewExports("operator", log)
	if err := x.Allow(viewer); !errors.Is(err, ops.ErrForbidden) {
		t.Fatalf("a viewer's export: %v, want ErrForbidden", err)
	}
	if _, err := x.Begin(ctx, nil, viewer, audit.Entry{Actor: viewer.Name, Target: "t"}, nil); !errors.Is(err, ops.ErrForbidden) || len(log.rows) != 0 {
		t.Fatalf("a viewer's export began: %v, %d rows", err, len(log.rows))
	}
	f, err := Compile(Kafka, `key == "X"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n       int64
		failed  error
		outcome string
	}{{5, nil, audit.OutcomeOK}, {5, errors.New("broker gone"), audit.OutcomePartial}, {0, errors.New("broker gone"), audit.OutcomeFailed}} {
		log.rows = nil
		e, err := x.Begin(ctx, nil, operator, audit.Entry{Actor: operator.Name, Target: "kafka/main/orders.DLT", Detail: map[string]any{"format": "csv"}}, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(log.rows) != 1 || log.rows[0].Action != "content.export" || log.rows[0].Detail["filter"] != `key == "X"` {
			t.Fatalf("intent %+v", log.rows)
		}
		e.Finish(tc.n, map[string]any{"scanned": 9}, tc.failed)
		if len(log.rows) != 2 {
			t.Fatalf("%d rows after Finish, want the intent and its outcome", len(log.rows))
		}
		out := log.rows[1]
		if out.Outcome != tc.outcome || out.Count == nil || *out.Count != tc.n || out.Detail["scanned"] != 9 || out.Detail["format"] != "csv" {
			t.Errorf("%d lines, failed %v: outcome %+v, want %s", tc.n, tc.failed, out, tc.outcome)
		}
	}
	// No intent row, no export.
	log.fail = errors.New("store down")
	if _, err := x.Begin(ctx, nil, operator, audit.Entry{Actor: operator.Name, Target: "t"}, nil); !errors.Is(err, ops.ErrUnavailable) {
		t.Fatalf("an export the log cannot record: %v, want ErrUnavailable", err)
	}
}
