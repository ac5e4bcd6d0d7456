package store_test

import (
	"testing"

	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/triage"
)

// A resolution is audited before its effect: when the intent row cannot be written nothing
// changes; when the outcome row cannot be, the change rolls back with it and a failed row names
// the intent; otherwise the records and the ok row commit together. Counts only cover the
// records still in the partitions' ranges.
func TestSetResolutionsAuditedBeforeEffect(t *testing.T) {
	ctx, s := leaseStore(t)
	db := s.Pool()
	marks := []triage.Mark{
		{RecordKey: triage.RecordKey{Partition: 0, Offset: 1}, ExceptionType: "X"},
		{RecordKey: triage.RecordKey{Partition: 0, Offset: 2}, ExceptionType: "X"},
		{RecordKey: triage.RecordKey{Partition: 1, Offset: 7}, ExceptionType: "Y", ExceptionCause: "Z"},
	}
	entry := audit.Entry{Actor: "otto", Role: "operator", Action: "kafka.resolve", Target: "kafka/main/orders.DLT", Reason: "fixed"}
	rows := func() (n int) {
		t.Helper()
		if err := db.QueryRow(ctx, `SELECT count(*) FROM dead_letter_resolution`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	audit := func(outcome string) (n int) {
		t.Helper()
		if err := db.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'kafka.resolve' AND outcome = $1`, outcome).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	refuse := func(outcome string) {
		t.Helper()
		_, err := db.Exec(ctx, `CREATE OR REPLACE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.outcome = '`+outcome+`' THEN RAISE EXCEPTION 'audit refused'; END IF; RETURN NEW; END $$;
			DROP TRIGGER IF EXISTS refuse_audit ON audit_log;
			CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_audit()`)
		if err != nil {
			t.Fatal(err)
		}
	}

	refuse("started")
	if _, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "", marks, triage.StateResolved, "fixed"); err == nil || rows() != 0 {
		t.Fatalf("no intent row: err %v, %d rows written", err, rows())
	}
	refuse("ok")
	if _, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "", marks, triage.StateResolved, "fixed"); err == nil || rows() != 0 {
		t.Fatalf("no outcome row: err %v, %d rows written", err, rows())
	}
	if audit("started") != 1 || audit("failed") != 1 {
		t.Fatalf("after the failed outcome: %d intents, %d failed rows", audit("started"), audit("failed"))
	}
	refuse("none")
	n, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "", marks, triage.StateResolved, "fixed")
	if err != nil || n != 3 || rows() != 3 || audit("ok") != 1 {
		t.Fatalf("resolved: %d, %v; %d rows, %d ok", n, err, rows(), audit("ok"))
	}
	// Again: nothing changes state. Reopening one: one changes.
	if n, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "", marks, triage.StateResolved, "fixed"); err != nil || n != 0 {
		t.Fatalf("resolved again: %d, %v", n, err)
	}
	if n, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "", marks[:1], triage.StateOpen, ""); err != nil || n != 1 {
		t.Fatalf("reopened: %d, %v", n, err)
	}
	// Offset 1 is open again; offset 2 fell out of partition 0's range (retention): 1 settled.
	settled, err := s.SettledDeadLetters(ctx, "main", []triage.Span{{Topic: "orders.DLT", Partition: 0, Start: 3, End: 10},
		{Topic: "orders.DLT", Partition: 1, Start: 0, End: 10}})
	if err != nil || settled["orders.DLT"] != 1 {
		t.Fatalf("settled: %v, %v", settled, err)
	}
	groups, err := s.SettledByErrorGroup(ctx, "main", "orders.DLT", []triage.Span{{Topic: "orders.DLT", Partition: 0, Start: 0, End: 10},
		{Topic: "orders.DLT", Partition: 1, Start: 0, End: 10}})
	if err != nil || groups[triage.GroupKey{Type: "X"}] != 1 || groups[triage.GroupKey{Type: "Y", Cause: "Z"}] != 1 {
		t.Fatalf("by group: %v, %v", groups, err)
	}
	got, err := s.Resolutions(ctx, "main", "orders.DLT", "", []triage.RecordKey{{Partition: 0, Offset: 1}, {Partition: 0, Offset: 2}, {Partition: 0, Offset: 9}})
	if err != nil || got[triage.RecordKey{Partition: 0, Offset: 1}].State != "open" || got[triage.RecordKey{Partition: 0, Offset: 2}].State != "resolved" ||
		got[triage.RecordKey{Partition: 0, Offset: 2}].Actor != "otto" || len(got) != 2 {
		t.Fatalf("resolutions: %+v, %v", got, err)
	}
	if _, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "", marks, "closed", "x"); err == nil {
		t.Fatal("an unknown state was accepted")
	}
}
