package store_test

import (
	"testing"

	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/replay"
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

// A mark belongs to the topic it was made on (its Kafka topic ID): once the topic was deleted and
// created again, every reader leaves the old marks out (the records at their offsets are open),
// a mark made before IDs were kept still counts, and a new mark replaces the old one at its
// offset — counted as a change even in the old mark's state. The DLT list's count is the error
// groups' summed, and a replay job marks for its plan's topic.
func TestResolutionsBelongToTheirTopic(t *testing.T) {
	ctx, s := leaseStore(t)
	entry := audit.Entry{Actor: "otto", Role: "operator", Action: "kafka.resolve", Target: "kafka/main/orders.DLT", Reason: "old"}
	mark := func(o int64, typ string) triage.Mark {
		return triage.Mark{RecordKey: triage.RecordKey{Partition: 0, Offset: o}, ExceptionType: typ}
	}
	old := []triage.Mark{mark(0, "E.OldGen"), mark(1, "E.OldGen"), mark(2, "E.OldGen"), mark(5, "E.OldGen")}
	if n, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "id-1", old, triage.StateIgnored, "old gen ignore"); err != nil || n != 4 {
		t.Fatalf("marks of the first topic: %d, %v", n, err)
	}
	// Offset 5's mark is from before topic IDs were kept.
	if _, err := s.Pool().Exec(ctx, `UPDATE dead_letter_resolution SET topic_id = '' WHERE "offset" = 5`); err != nil {
		t.Fatal(err)
	}
	keys := []triage.RecordKey{{Offset: 0}, {Offset: 1}, {Offset: 2}, {Offset: 5}}
	spans := func(id string) []triage.Span {
		return []triage.Span{{Topic: "orders.DLT", TopicID: id, Partition: 0, Start: 0, End: 8}}
	}
	read := func(id string) (records, states int, settled int64, groups map[triage.GroupKey]int64) {
		t.Helper()
		res, err := s.Resolutions(ctx, "main", "orders.DLT", id, keys)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.SettledStates(ctx, "main", "orders.DLT", id)
		if err != nil {
			t.Fatal(err)
		}
		byTopic, err := s.SettledDeadLetters(ctx, "main", spans(id))
		if err != nil {
			t.Fatal(err)
		}
		groups, err = s.SettledByErrorGroup(ctx, "main", "orders.DLT", spans(id))
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, n := range groups {
			sum += n
		}
		if sum != byTopic["orders.DLT"] {
			t.Fatalf("topic %q: the DLT list counts %d settled, the error groups %d", id, byTopic["orders.DLT"], sum)
		}
		return len(res), len(st), byTopic["orders.DLT"], groups
	}
	for _, c := range []struct {
		id             string
		records, state int
		settled        int64
	}{{"id-1", 4, 4, 4}, {"", 4, 4, 4}, {"id-2", 1, 1, 1}} {
		if r, st, n, _ := read(c.id); r != c.records || st != c.state || n != c.settled {
			t.Fatalf("topic %q: %d resolutions, %d settled states, %d settled; want %d, %d, %d", c.id, r, st, n, c.records, c.state, c.settled)
		}
	}

	// On the new topic: reopening a record the old topic marked changes nothing (it is open);
	// ignoring it is a change, in the old mark's state too, and takes the new record's group.
	if n, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "id-2", []triage.Mark{mark(0, "E.NewGen")}, triage.StateOpen, ""); err != nil || n != 0 {
		t.Fatalf("reopening an old topic's mark: %d, %v", n, err)
	}
	if n, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "id-2", []triage.Mark{mark(0, "E.NewGen")}, triage.StateIgnored, "new gen"); err != nil || n != 1 {
		t.Fatalf("ignoring the new record at an old mark's offset: %d, %v", n, err)
	}
	if _, _, n, groups := read("id-2"); n != 2 || groups[triage.GroupKey{Type: "E.NewGen"}] != 1 || groups[triage.GroupKey{Type: "E.OldGen"}] != 1 {
		t.Fatalf("the new topic after ignoring offset 0: %d settled, groups %v", n, groups)
	}
	if _, _, n, _ := read("id-1"); n != 3 {
		t.Fatalf("the first topic's marks after the new one's: %d settled, want 3 (offset 0 is the new topic's now)", n)
	}

	// A replay job marks for the topic its plan read.
	w, err := s.BeginPlan(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	src := []byte(`{"kind":"kafka","cluster":"main","topic":"orders.DLT","topic_id":"id-2"}`)
	if err := w.Commit(ctx, replay.StoredPlan{ID: "p", Actor: "t", Source: src, Total: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJob(ctx, replay.Job{ID: "j", PlanID: "p", Actor: "t", RatePerSecond: 1, Total: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkReplayed(ctx, "j", "t", "main", "orders.DLT", []triage.Mark{mark(1, "E.NewGen")}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Resolutions(ctx, "main", "orders.DLT", "id-2", []triage.RecordKey{{Offset: 1}})
	if err != nil || res[triage.RecordKey{Offset: 1}].State != triage.StateReplayed || res[triage.RecordKey{Offset: 1}].JobID != "j" {
		t.Fatalf("the replayed mark on the new topic: %+v, %v", res, err)
	}
}

// A record a replay job published stays replayed, with the job's id, when a person then resolves
// or ignores its error group (issue 37, item 7: the group's resolution overwrote it); the others
// are resolved, and opening the replayed one still may.
func TestResolutionKeepsReplayHistory(t *testing.T) {
	ctx, s := leaseStore(t)
	marks := []triage.Mark{
		{RecordKey: triage.RecordKey{Partition: 0, Offset: 1}, ExceptionType: "X"},
		{RecordKey: triage.RecordKey{Partition: 0, Offset: 2}, ExceptionType: "X"},
	}
	if err := s.MarkReplayed(ctx, "job-7", "otto", "main", "orders.DLT", marks[:1]); err != nil {
		t.Fatal(err)
	}
	entry := audit.Entry{Actor: "ada", Role: "operator", Action: "kafka.resolve", Target: "kafka/main/orders.DLT", Reason: "fixed"}
	for _, state := range []string{triage.StateResolved, triage.StateIgnored} {
		if _, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "", marks, state, "fixed"); err != nil {
			t.Fatal(err)
		}
		got, err := s.Resolutions(ctx, "main", "orders.DLT", "", []triage.RecordKey{marks[0].RecordKey, marks[1].RecordKey})
		if err != nil {
			t.Fatal(err)
		}
		if r := got[marks[0].RecordKey]; r.State != triage.StateReplayed || r.JobID != "job-7" {
			t.Errorf("%s over a replayed record: %+v; want replayed by job-7", state, r)
		}
		if r := got[marks[1].RecordKey]; r.State != state {
			t.Errorf("the open record: %+v; want %s", r, state)
		}
	}
	if n, err := s.SetResolutions(ctx, entry, "main", "orders.DLT", "", marks[:1], triage.StateOpen, "again"); err != nil || n != 1 {
		t.Fatalf("opening the replayed record: %d, %v", n, err)
	}
}
