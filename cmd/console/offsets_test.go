package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// Twenty different offset plans for one group, applied at once through the API of two consoles
// sharing one database (two replicas): exactly one apply answers 200; the DLT, counted with a
// client of the test's own, holds exactly that plan's skipped records, and the group is committed
// at that plan's offset. Both replicas' applies copied and committed before they took turns (QA:
// two 200s, 22 copies, the group at the offset of the one that did not say ok last).
func TestConcurrentOffsetAppliesAcrossReplicas(t *testing.T) {
	k := startKafka(t, map[string]int32{"shipments": 1, "shipments.DLT": 1})
	ctx := waittest.Context(t, 2*time.Minute)
	cl := kfaketest.Client(t, k.Cluster(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	var recs []*kgo.Record
	for i := range 40 {
		recs = append(recs, &kgo.Record{Topic: "shipments", Value: []byte(fmt.Sprintf(`{"shipment":%d}`, i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kfaketest.Commit(t, adm, "race", "shipments", map[int32]int64{0: 10})
	cfg := fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
kafka: [{name: main, brokers: [%q]}]
`, pgtest.NewDatabase(t), k.Addrs()[0])
	consoles := []string{startConsole(t, cfg), startConsole(t, cfg)}
	api := "/api/v1/kafka/main/groups/race/offsets/"

	type plan struct {
		PlanID     string `json:"plan_id"`
		Skipped    int64  `json:"skipped"`
		Partitions []struct {
			New int64 `json:"new"`
		} `json:"partitions"`
	}
	var plans []plan
	for n := 1; n <= 20; n++ {
		r := do(t, nil, "POST", consoles[0]+api+"plan", "application/json",
			fmt.Sprintf(`{"topic":"shipments","partitions":[0],"to":{"kind":"shift","by":%d}}`, n))
		if r.status != http.StatusOK {
			t.Fatalf("plan %d: %d %s", n, r.status, r.body)
		}
		plans = append(plans, decode[plan](t, r))
	}
	answers := make([]rawResponse, len(plans))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Go(func() {
			<-start
			answers[i] = doRaw("POST", consoles[i%2]+api+"apply", "application/json", `{"plan_id":"`+p.PlanID+`","reason":"qa race"}`)
		})
	}
	close(start)
	wg.Wait()
	var won []plan
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Errorf("apply %d: %v", i+1, a.err)
		case a.status == http.StatusOK:
			won = append(won, plans[i])
		case a.status != http.StatusConflict:
			t.Errorf("apply %d: %d %s, want 200 or 409", i+1, a.status, a.body)
		default:
			var refused struct{ Copied int }
			if json.Unmarshal([]byte(a.body), &refused) == nil && refused.Copied != 0 {
				t.Errorf("refused apply %d copied %d", i+1, refused.Copied)
			}
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d applies answered 200, want exactly 1", len(won))
	}
	ends, err := adm.ListEndOffsets(ctx, "shipments.DLT")
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := ends.Lookup("shipments.DLT", 0); e.Offset != won[0].Skipped {
		t.Errorf("shipments.DLT holds %d records, want the applied plan's %d skipped", e.Offset, won[0].Skipped)
	}
	offs, err := adm.FetchOffsets(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("shipments", 0); o.At != won[0].Partitions[0].New {
		t.Errorf("committed %d, want the applied plan's %d", o.At, won[0].Partitions[0].New)
	}
}
