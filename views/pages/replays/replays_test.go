package replays

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/views/viewtest"
)

func TestJobDuration(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	t1 := t0.Add(3*time.Minute + 12*time.Second)
	for _, c := range []struct {
		name              string
		started, finished *time.Time
		want              string
		sort              string // milliseconds, so that 17 ms sorts before 1 s; "" sorts last
	}{
		{"NotStarted", nil, nil, "not started", ""},
		{"Finished", &t0, &t1, "3 min 12 s", "192000"},
		{"Running", &t0, nil, "running for 5 min", "300000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, now := JobView{StartedAt: c.started, FinishedAt: c.finished}, t0.Add(5*time.Minute)
			if got := j.Duration(now); got != c.want {
				t.Errorf("%q, want %q", got, c.want)
			}
			if got := j.durationSort(now); got != c.sort {
				t.Errorf("sort key %q, want %q", got, c.sort)
			}
		})
	}
}

// The outcome badge: done is green, done with failures amber (never green), failed red; a
// running job is blue, a paused one amber with a "paused" badge beside it.
func TestOutcomeBadge(t *testing.T) {
	for _, c := range []struct {
		job       JobView
		tone      string
		label     string
		pausedTag bool
	}{
		{JobView{Status: "done", Outcome: OutcomeDone}, "tone-ok", "done", false},
		{JobView{Status: "done", Outcome: OutcomeDoneWithFailures, Failed: 3}, "tone-warn", "done with failures", false},
		{JobView{Status: "failed", Outcome: "failed"}, "tone-danger", "failed", false},
		{JobView{Status: "cancelled", Outcome: "cancelled"}, "tone-neutral", "cancelled", false},
		{JobView{Status: "running", Outcome: "running", Running: true}, "tone-info", "running", false},
		{JobView{Status: "running", Outcome: "running", Running: true, Paused: "broker main is down"}, "tone-warn", "running", true},
	} {
		t.Run(c.job.Outcome+map[bool]string{true: "Paused"}[c.pausedTag], func(t *testing.T) {
			doc, _ := viewtest.Render(t, OutcomeBadge(c.job))
			b := doc.Find(`[data-testid="status-badge"]`)
			if !b.HasClass(c.tone) || strings.TrimSpace(b.Text()) != c.label || b.AttrOr("data-outcome", "") != c.job.Outcome {
				t.Errorf("badge %q class %q, want %q %s", b.Text(), b.AttrOr("class", ""), c.label, c.tone)
			}
			if got := strings.Contains(doc.Text(), "paused"); got != c.pausedTag {
				t.Errorf("paused tag %v, want %v", got, c.pausedTag)
			}
		})
	}
}

// An outbox job sets rows back to READY for the service's relay: its page says so, never that a
// broker confirmed a publish the console did not make (issue 37, item 11).
func TestOutboxJobSaysSetBackToReady(t *testing.T) {
	done := JobView{ID: "j1", Status: "done", Outcome: OutcomeDone, Total: 7, Published: 7, Requeue: true}
	doc, _ := viewtest.Render(t, Job(JobPage{Job: done,
		Ledger: []LedgerRow{{Seq: 1, MessageID: "evt-1", Outcome: RequeuedWords, Detail: "requeued to READY"}}}))
	text := strings.Join(strings.Fields(doc.Text()), "") // the cards' parts are separate elements
	for _, want := range []string{"SetbacktoREADY7fortherelaytopublish;theconsolepublishesnothing", "1setbacktoREADYfortherelayevt-1"} {
		if !strings.Contains(text, want) {
			t.Errorf("the outbox job's page lacks %q:\n%s", want, text)
		}
	}
	for _, false_ := range []string{"confirmedbythebroker", "Published"} {
		if strings.Contains(text, false_) {
			t.Errorf("the outbox job's page says %q:\n%s", false_, text)
		}
	}
	if got := done.Summary(); got != "done: 7 set back to READY for the relay, 0 skipped, 0 failed" {
		t.Errorf("summary %q", got)
	}
	kafka := done
	kafka.Requeue = false
	doc, _ = viewtest.Render(t, Job(JobPage{Job: kafka}))
	if text := strings.Join(strings.Fields(doc.Text()), ""); !strings.Contains(text, "Published7confirmedbythebroker") {
		t.Errorf("a Kafka job's page lost its words:\n%s", text)
	}
}
