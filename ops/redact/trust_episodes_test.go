package redact_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/ops/waittest"
)

// TestTrustEpisodeSampleMaskedOnRead: an error group's sample, stored as the rules were when the
// sampler read it, is masked by the rules in force when it is read: after a reload adds the JSON
// path of the card number that the stored sample quotes, the overview's new-error-group problem
// and the notifications (what Episodes gives them) quote it no more.
func TestTrustEpisodeSampleMaskedOnRead(t *testing.T) {
	const card = "4000000000000002"
	ctx := waittest.Context(t, time.Minute)
	st := storetest.Open(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := st.RecordErrorGroups(ctx, 24*time.Hour, []history.ErrorGroupSighting{{Source: "kafka/main/orders.DLT",
		Key: "com.acme.PaymentException|", ExceptionType: "com.acme.PaymentException", FirstAt: now, LastAt: now, Count: 1,
		SampleMessage: "card " + card + " declined"}}); err != nil {
		t.Fatal(err)
	}
	red, err := redact.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	overview := func() string {
		eps, err := red.Episodes(st).ErrorGroupEpisodes(ctx, now.Add(-time.Hour), 100)
		if err != nil || len(eps) != 1 {
			t.Fatalf("episodes: %v %+v", err, eps)
		}
		var b strings.Builder
		for _, p := range health.NewErrorGroupProblems([]string{"main"}, eps, nil, now) {
			b.WriteString(p.Summary + "\n")
		}
		return eps[0].SampleMessage + "\n" + b.String()
	}
	if got := overview(); !strings.Contains(got, card) {
		t.Fatalf("before the reload, with no rule, the sample shows whole: %q", got)
	}
	commit, err := red.PrepareReplace(nil, []string{"$.card.number"})
	if err != nil {
		t.Fatal(err)
	}
	commit()
	if got := overview(); strings.Contains(got, card) {
		t.Errorf("after the reload added $.card.number, the overview still quotes it: %q", got)
	}
}

// A sample the sampler stored masked by the rules still in force is shown as stored: with JSON
// paths configured, a clean sample ("timeout after 30s", which quotes nothing hidden) was hidden
// from the overview and notifications too, since the text alone cannot tell. Stored under other
// rules, it is masked again.
func TestEpisodeSampleStoredUnderTheRulesInForce(t *testing.T) {
	ctx := waittest.Context(t, time.Minute)
	st := storetest.Open(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	red, err := redact.New(nil, []string{"$.card.number"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := redact.New(nil, []string{"$.iban"})
	if err != nil {
		t.Fatal(err)
	}
	if red.Digest() == "" || red.Digest() == other.Digest() {
		t.Fatalf("digests %q and %q", red.Digest(), other.Digest())
	}
	for i, by := range []string{red.Digest(), other.Digest()} {
		if err := st.RecordErrorGroups(ctx, 24*time.Hour, []history.ErrorGroupSighting{{Source: "kafka/main/orders.DLT",
			Key: "T" + string(rune('0'+i)) + "|", ExceptionType: "T" + string(rune('0'+i)), FirstAt: now, LastAt: now, Count: 1,
			SampleMessage: "timeout after 30s", SampleMaskedBy: by}}); err != nil {
			t.Fatal(err)
		}
	}
	eps, err := red.Episodes(st).ErrorGroupEpisodes(ctx, now.Add(-time.Hour), 100)
	if err != nil || len(eps) != 2 {
		t.Fatalf("episodes: %v %+v", err, eps)
	}
	for _, e := range eps {
		want := "timeout after 30s" // masked by these rules when stored
		if e.ExceptionType == "T1" {
			want = redact.Redacted // masked by other rules: the text alone cannot tell
		}
		if e.SampleMessage != want {
			t.Errorf("%s: sample %q, want %q", e.ExceptionType, e.SampleMessage, want)
		}
	}
}
