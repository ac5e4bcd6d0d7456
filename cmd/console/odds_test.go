package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// TestTraceShowsOtherConsumersInboxRows (issue 36, 14): the trace showed only the configured
// consumers' inbox rows, though the seed's inbox is shared (a consumer column): fraud-check's
// row for e-1, in the same table, was nowhere. It is a step of its own now, "processed by
// fraud-check … not inventory-service", told once though two configured consumers read the
// table, and it decides nothing about their verdicts.
func TestTraceShowsOtherConsumersInboxRows(t *testing.T) {
	w := newTraceWorld(t)
	pgtest.Exec(t, w.outboxDSN, `INSERT INTO inbox_message (message_id, consumer, received_at, processed_at)
		VALUES ('e-1', 'fraud-check', now() - interval '1 minute', now()), ('e-3', 'fraud-check', now(), NULL)`)
	base := w.console(t, "")
	a := getTrace(t, base, "message_id=e-1")
	t.Log(a.dump())
	other := a.steps("inbox fraud-check")
	if len(other) != 1 || !other[0].Found || !strings.Contains(other[0].Detail, "processed by fraud-check at") ||
		!strings.Contains(other[0].Detail, "another consumer") {
		t.Errorf("fraud-check's row for e-1: %+v", other)
	}
	for _, s := range a.steps("inbox inventory-service") {
		if s.Found {
			t.Errorf("inventory-service, which has no row for e-1, reads as found: %+v", s)
		}
	}
	if in := getTrace(t, base, "message_id=e-3").steps("inbox fraud-check"); len(in) != 1 || !strings.Contains(in[0].Detail, "received by fraud-check but not processed") {
		t.Errorf("fraud-check's unprocessed row for e-3: %+v", in)
	}
}

// TestSmallRefusalsInTheUsersWords (issue 36, 15): a dead letter whose original-topic header names
// the dead-letter topic itself was planned as a publish back into it, and is now left with a
// note (a replay would only add a copy there; a destination sends it elsewhere); HEAD on API
// routes was a 405; a plan's 404 echoed a 3,000-character id; {"ids":["a"]} named int64's range;
// the offset plan approve route approved a plan of another group than its URL's. Unknown fields
// in a plan request are refused, naming the field.
func TestSmallRefusalsInTheUsersWords(t *testing.T) {
	k := startKafka(t, map[string]int32{"orders": 1, "orders.DLT": 1})
	ctx := waittest.Context(t, time.Minute)
	cl := kfaketest.Client(t, k.Cluster())
	mustDo(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "orders.DLT", Value: []byte(`{}`), Headers: []kgo.RecordHeader{
		{Key: "kafka_dlt-original-topic", Value: []byte("orders.DLT")}, {Key: "messageId", Value: []byte("m-1")}}},
		&kgo.Record{Topic: "orders", Value: []byte(`{}`)}, &kgo.Record{Topic: "orders", Value: []byte(`{}`)}).FirstErr())
	kfaketest.Commit(t, kadm.NewClient(cl), "billing", "orders", map[int32]int64{0: 0})
	base := startConsole(t, fmt.Sprintf(`auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
kafka: [{name: main, brokers: [%q]}]
replay: {four_eyes: {enabled: true, threshold: 1}}
`, pgtest.NewDatabase(t), seededOutbox(t), k.Addrs()[0]))
	post := func(path, body string) response { return do(t, nil, "POST", base+path, "application/json", body) }

	t.Run("DeadLetterNamingItsOwnTopic", func(t *testing.T) {
		r := post(paths.APIPlanReplay, `{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[{"partition":0,"offset":0}]}}`)
		if r.status != http.StatusOK || !strings.Contains(r.body, `"publish":0`) || !strings.Contains(r.body, `"skip_unresolvable":1`) ||
			!strings.Contains(r.body, "its destination is orders.DLT itself, the dead-letter topic it is in") {
			t.Errorf("plan: %d %s", r.status, r.body)
		}
		plan := decode[struct {
			PlanID string `json:"plan_id"`
		}](t, r).PlanID
		if page := do(t, nil, "GET", base+paths.ReplayPlan(plan), "", ""); !strings.Contains(page.body, `data-testid="item-note"`) ||
			!strings.Contains(page.body, "the dead-letter topic it is in") {
			t.Errorf("the plan page does not say why the item is skipped")
		}
	})
	t.Run("UnknownFieldInAPlan", func(t *testing.T) {
		r := post(paths.APIPlanReplay, `{"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","record":[{"partition":0,"offset":0}]}}`)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, `unknown field \"record\"`) {
			t.Errorf("a plan naming a field that is not one: %d %s", r.status, r.body)
		}
	})
	t.Run("HeadOnAPIRoutes", func(t *testing.T) {
		for _, p := range []string{paths.APIOverview, paths.APIOutboxes, paths.APIReplays, paths.APIKafkaRecords("main", "orders.DLT") + "?partition=0"} {
			if r := do(t, nil, "HEAD", base+p, "", ""); r.status != http.StatusOK || r.body != "" {
				t.Errorf("HEAD %s: %d (%d bytes)", p, r.status, len(r.body))
			}
		}
		if r := do(t, nil, "HEAD", base+paths.APIReplayPlan("nope"), "", ""); r.status != http.StatusNotFound {
			t.Errorf("HEAD of an unknown plan: %d", r.status)
		}
	})
	t.Run("LongIDIsNotEchoed", func(t *testing.T) {
		r := do(t, nil, "GET", base+paths.APIReplayPlan(strings.Repeat("x", 3000)), "", "")
		if r.status != http.StatusNotFound || len(r.body) > 400 || !strings.Contains(r.body, "…") {
			t.Errorf("a 3,000-character plan id: %d, %d bytes: %.200s", r.status, len(r.body), r.body)
		}
	})
	t.Run("IDsInTheUsersWords", func(t *testing.T) {
		r := post(paths.APIOutboxRelease("orders"), `{"ids":["a"]}`)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, "ids: must be a whole number, got a string") || strings.Contains(r.body, "9223372036854775807") {
			t.Errorf(`{"ids":["a"]}: %d %s`, r.status, r.body)
		}
	})
	t.Run("OffsetApproveOfAnotherGroup", func(t *testing.T) {
		r := post(paths.APIOffsetsPlan("main", "billing"), `{"topic":"orders","partitions":[0],"to":{"kind":"shift","by":2}}`)
		plan := decode[struct {
			PlanID   string `json:"plan_id"`
			FourEyes bool   `json:"four_eyes"`
		}](t, r)
		if !plan.FourEyes {
			t.Fatalf("the plan needs no approval: %s", r.body)
		}
		if r := post(paths.APIOffsetsApprove("main", "shipping"), `{"plan_id":"`+plan.PlanID+`"}`); r.status != http.StatusNotFound ||
			!strings.Contains(r.body, "is for group billing of cluster main, not shipping of main") {
			t.Errorf("billing's plan approved through shipping's route: %d %s", r.status, r.body)
		}
	})
}
