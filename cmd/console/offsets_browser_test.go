package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// A consumer stuck on a poison record: the group page shows the time lag beside the offset lag
// and, once the group is STALL, offers "Skip the record at offset N", saying the consumers must
// be stopped first; the plan page names the member and, while it runs, offers no Apply (which
// Kafka would refuse) but says to stop it; once it stops the page, refreshing itself, offers
// Apply, and the record is copied to the DLT and the offset moves.
func TestBrowserSkipPoisonRecord(t *testing.T) {
	k := startKafka(t, map[string]int32{"payments": 1, "payments.DLT": 1})
	ctx := waittest.Context(t, 3*time.Minute)
	cl := kfaketest.Client(t, k.Cluster(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "payments", Value: []byte(fmt.Sprintf(`{"payment":%d}`, i)),
			Timestamp: time.Now().Add(-14*time.Minute + time.Duration(i)*time.Minute)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The consumer processed 0–2 and is stuck on 3: committed 3, alive, no progress.
	if err := adm.CommitAllOffsets(ctx, "settlement", kadm.OffsetsFromRecords(kgo.Record{Topic: "payments", Offset: 2})); err != nil {
		t.Fatal(err)
	}
	member := kfaketest.Client(t, k.Cluster(), kgo.ClientID("settlement-worker"), kgo.ConsumerGroup("settlement"),
		kgo.ConsumeTopics("payments"), kgo.DisableAutoCommit())
	member.PollRecords(ctx, 1)

	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
sampler: {interval: 1s}
kafka: [{name: main, brokers: [%q], lag: {window: 2s, stop_after: 1h, warn_after_seconds: 300, error_after_seconds: 600}}]
`, pgtest.NewDatabase(t), k.Addrs()[0]))

	bctx, _ := newBrowser(t)
	page := base + "/kafka/main/groups/settlement"
	// The member stays in the group by its own heartbeats; it must not poll here, since a poll
	// once the six records after 3 are taken waits for a record that never comes (a CI run hung
	// in one until the test's deadline).
	waittest.For(t, time.Minute, "a skip offer on the group page", func() (string, bool) {
		act(t, bctx, chromedp.Navigate(page))
		if must(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=skip-form]').length`)) == 1 {
			return "", true
		}
		return must(t, bctx, chromedp.Evaluate[string](`document.body.innerText`)), false
	})
	timeLag := must(t, bctx, chromedp.Text(`[data-testid=partition-time-lag]`))
	button := must(t, bctx, chromedp.Text(`[data-testid=skip-button]`))
	if !strings.Contains(timeLag, "min") || button != "Skip the record at offset 3" {
		t.Errorf("time lag %q, button %q", timeLag, button)
	}
	if stop := must(t, bctx, chromedp.Text(`[data-testid=skip-stop-first]`)); !strings.Contains(stop, "consumers must be stopped") {
		t.Errorf("the skip offer of a group with members does not say to stop them first: %q", stop)
	}
	screenshot(t, bctx, "kafka-group-stall")
	if d := os.Getenv("REDRIVE_SCREENSHOTS"); d != "" {
		t.Logf("screenshots in %s", d)
	}

	act(t, bctx, chromedp.Click(`[data-testid=skip-button]`))
	waitText(t, bctx, "Offset move offplan_")
	warnings := must(t, bctx, chromedp.Evaluate[string](`[...document.querySelectorAll('[data-testid=offsets-warning]')].map(e => e.innerText).join(' ')`))
	if !strings.Contains(warnings, "settlement-worker") {
		t.Errorf("plan warnings do not name the member: %q", warnings)
	}
	// While the consumer runs there is no Apply to press (it would be refused): the page says to
	// stop the consumers, naming the member.
	if n := must(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=apply-button]').length`)); n != 0 {
		t.Errorf("%d Apply buttons on the plan page of a group with a member", n)
	}
	blocked := must(t, bctx, chromedp.Text(`[data-testid=apply-blocked]`))
	if !strings.Contains(blocked, "Stop the group's consumers, then apply") || !strings.Contains(blocked, "settlement-worker") {
		t.Errorf("the plan page of a group with a member says %q", blocked)
	}
	member.Close()
	waittest.Until(t, 20*time.Second, "the member leaves the group", func() bool {
		d, err := adm.DescribeGroups(ctx, "settlement")
		return err == nil && len(d["settlement"].Members) == 0
	})
	// The page checks again by itself and offers Apply once the group is empty, without a reload.
	waittest.Until(t, 20*time.Second, "the plan page offers Apply", func() bool {
		return must(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=apply-button]').length`)) == 1
	})
	act(t, bctx, chromedp.SendKeys(`[data-testid=apply-reason]`, "poison payment 3, fixed in 2.1"))
	act(t, bctx, chromedp.Click(`[data-testid=apply-button]`))
	waitText(t, bctx, "copied to")
	outcome := must(t, bctx, chromedp.Text(`[data-testid=offsets-outcome]`))
	if !strings.Contains(outcome, "1 skipped records copied to payments.DLT") {
		t.Errorf("outcome %q", outcome)
	}
	screenshot(t, bctx, "kafka-offsets-applied")
	offs, err := adm.FetchOffsets(ctx, "settlement")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("payments", 0); o.At != 4 {
		t.Errorf("committed %d after the skip, want 4", o.At)
	}
	ends, err := adm.ListEndOffsets(ctx, "payments.DLT")
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := ends.Lookup("payments.DLT", 0); e.Offset != 1 {
		t.Errorf("payments.DLT holds %d records, want 1", e.Offset)
	}
}
