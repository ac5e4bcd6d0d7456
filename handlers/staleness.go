package handlers

import (
	"fmt"
	"time"

	"github.com/redrive/redrive/ops/history"
)

// freshnessJSON is how old a snapshot is, beside its sampled_at and error: a snapshot nobody has
// sampled for sampler.StaleAfter intervals reads stale: true with a note, never as current.
type freshnessJSON struct {
	Stale      bool   `json:"stale"`
	AgeSeconds *int64 `json:"age_seconds"` // null before the first sample
	StaleNote  string `json:"stale_note,omitempty"`
}

func toFreshnessJSON(f history.Freshness, at time.Time) freshnessJSON {
	out := freshnessJSON{Stale: f.Stale}
	if !at.IsZero() {
		age := int64(f.Age / time.Second)
		out.AgeSeconds = &age
	}
	if f.Stale {
		out.StaleNote = staleNote(f)
	}
	return out
}

func staleNote(f history.Freshness) string {
	return fmt.Sprintf("stale: not sampled for %s, no replica is sampling this source; the data shown is %s old",
		f.Since.Round(time.Second), f.Age.Round(time.Second))
}

// sampleNote is what a page's panel shows under the snapshot: the sampling error, and a stale
// snapshot's note (so a frozen snapshot is never shown as current).
func sampleNote(sampleErr string, f history.Freshness) string {
	switch {
	case !f.Stale:
		return sampleErr
	case sampleErr == "":
		return staleNote(f)
	default:
		return staleNote(f) + "; last error: " + sampleErr
	}
}

// refreshSeconds is how often a page showing the sampler's snapshots polls for new numbers: the
// sampler's interval when snapshots tell it (at least 2 s), else 15 s.
func refreshSeconds(snapshots any) int {
	if s, ok := snapshots.(interface{ Interval() time.Duration }); ok && s.Interval() > 0 {
		return max(int(s.Interval().Round(time.Second)/time.Second), 2)
	}
	return 15
}
