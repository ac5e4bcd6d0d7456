package kafka

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/redrive/redrive/configs"
)

// Sample is one observation of a group's position on one partition, taken by the sampler.
type Sample struct {
	At        time.Time
	Committed int64 // committed offset, -1 if none
	End       int64 // log end offset
	Lag       int64 // as in PartitionLag; -1 if unknown (such samples are ignored)
}

// StatusCode is a Burrow-style consumer status. Codes are ordered by Severity.
type StatusCode string

// Status codes, from harmless to alarming.
const (
	// StatusOK: the consumer keeps up, or there is nothing to judge yet.
	StatusOK StatusCode = "OK"
	// StatusEmpty: the group has no members (Kafka state Empty); its offsets are kept.
	StatusEmpty StatusCode = "EMPTY"
	// StatusDead: the group no longer exists on the coordinator (Kafka state Dead).
	StatusDead StatusCode = "DEAD"
	// StatusWarn: the lag grew across the evaluation window by at least LagRules.WarnMinLag.
	StatusWarn StatusCode = "WARN"
	// StatusStall: members exist and there is lag, but the committed offset did not move for a
	// whole window — consumers are alive but stuck (a poison message, a blocked handler).
	StatusStall StatusCode = "STALL"
	// StatusStop: lag and no commit movement for longer than LagRules.StopAfter.
	StatusStop StatusCode = "STOP"
)

// Severity orders codes for "worst of": OK 0, EMPTY and DEAD 1, WARN 2, STALL 3, STOP 4.
func (s StatusCode) Severity() int {
	switch s {
	case StatusEmpty, StatusDead:
		return 1
	case StatusWarn:
		return 2
	case StatusStall:
		return 3
	case StatusStop:
		return 4
	default:
		return 0
	}
}

// Status is a verdict with a one-line reason for people ("lag grew 1,200 → 4,800 over 5m").
// Reason is empty for OK.
type Status struct {
	Code   StatusCode
	Reason string
}

// PartitionSamples is the history of one partition of a group, oldest first or in any order.
type PartitionSamples struct {
	Topic     string
	Partition int32
	Samples   []Sample
}

// PartitionStatus is the verdict for one partition.
type PartitionStatus struct {
	Topic     string
	Partition int32
	Status    Status
}

// GroupStatus is a group's verdict: the worst partition's status, and each partition's.
type GroupStatus struct {
	Status     Status
	Worst      *PartitionStatus // the partition that decided Status; nil when there are none
	Partitions []PartitionStatus
}

// Evaluate judges one partition of a group from its samples, Burrow-style. It is pure: the
// sampler calls it with stored history, tests with tables. state and members are the group's
// current Kafka state and member count. Rules, from first match:
//
//   - state Dead → DEAD; state Empty → EMPTY (the reason mentions any lag left behind);
//   - lag > 0 and the committed offset has not moved for longer than rules.StopAfter → STOP;
//   - lag > 0, members > 0 and the committed offset did not move during the whole window → STALL;
//   - lag grew across the window by at least rules.WarnMinLag → WARN;
//   - otherwise OK.
//
// "Not moved for d" is known only as far back as the samples reach: the committed offset is
// taken as stuck since the oldest sample of the newest run of equal committed offsets.
func Evaluate(rules configs.LagRules, state string, members int, samples []Sample, now time.Time) Status {
	s := usable(samples)
	var last *Sample
	if len(s) > 0 {
		last = &s[len(s)-1]
	}
	switch state {
	case "Dead":
		return Status{StatusDead, "group is dead: no members and no state on the coordinator"}
	case "Empty":
		if last != nil && last.Lag > 0 {
			return Status{StatusEmpty, fmt.Sprintf("no members; lag %s left unconsumed", num(last.Lag))}
		}
		return Status{StatusEmpty, "no members"}
	}
	if last == nil {
		return Status{Code: StatusOK}
	}
	window, stopAfter := rules.Window.D(), rules.StopAfter.D()
	if window <= 0 {
		window = 5 * time.Minute
	}
	if stopAfter <= 0 {
		stopAfter = 15 * time.Minute
	}
	minGrowth := max(rules.WarnMinLag, 1)

	if last.Lag > 0 {
		since := s[len(s)-1].At
		for i := len(s) - 2; i >= 0 && s[i].Committed == last.Committed; i-- {
			since = s[i].At
		}
		stuck := now.Sub(since)
		switch {
		case stuck > stopAfter:
			if last.Committed < 0 {
				return Status{StatusStop, fmt.Sprintf("nothing committed for %s, lag %s", dur(stuck), num(last.Lag))}
			}
			return Status{StatusStop, fmt.Sprintf("no commit for %s (committed offset %s), lag %s", dur(stuck), num(last.Committed), num(last.Lag))}
		case members > 0 && stuck >= window:
			return Status{StatusStall, fmt.Sprintf("committed offset stuck at %s for %s with %s", num(last.Committed), dur(stuck), plural(members, "member"))}
		}
	}

	// Growth across the window: from the last sample at or before its start (or the oldest one
	// inside it) to the newest.
	from := now.Add(-window)
	base := -1
	for i := range s {
		if !s[i].At.After(from) {
			base = i
		} else {
			break
		}
	}
	if base < 0 {
		base = 0
	}
	if first := s[base]; base < len(s)-1 && last.Lag-first.Lag >= minGrowth {
		return Status{StatusWarn, fmt.Sprintf("lag grew %s → %s over %s", num(first.Lag), num(last.Lag), dur(last.At.Sub(first.At)))}
	}
	return Status{Code: StatusOK}
}

// EvaluateGroup evaluates every partition and gives the group the worst partition's status (ties
// go to the larger lag). A group in state Empty or Dead with no partitions still gets EMPTY/DEAD.
func EvaluateGroup(rules configs.LagRules, state string, members int, parts []PartitionSamples, now time.Time) GroupStatus {
	gs := GroupStatus{Partitions: make([]PartitionStatus, 0, len(parts))}
	worstLag := int64(-1)
	for _, p := range parts {
		st := Evaluate(rules, state, members, p.Samples, now)
		ps := PartitionStatus{Topic: p.Topic, Partition: p.Partition, Status: st}
		gs.Partitions = append(gs.Partitions, ps)
		lag := int64(-1)
		if u := usable(p.Samples); len(u) > 0 {
			lag = u[len(u)-1].Lag
		}
		if gs.Worst == nil || st.Code.Severity() > gs.Worst.Status.Code.Severity() ||
			(st.Code.Severity() == gs.Worst.Status.Code.Severity() && lag > worstLag) {
			w := ps
			gs.Worst, worstLag = &w, lag
		}
	}
	switch {
	case gs.Worst != nil:
		gs.Status = gs.Worst.Status
	case state == "Dead" || state == "Empty":
		gs.Status = Evaluate(rules, state, members, nil, now)
	default:
		gs.Status = Status{Code: StatusOK}
	}
	return gs
}

// Rate estimates the consumption rate (messages per second, from the least-squares slope of the
// committed offset) and the time to catch up (current lag over the rate at which lag shrinks, from
// the slope of the lag). ok is false with fewer than two usable samples spanning some time. A
// catch-up of 0 means no lag; a negative catch-up means the lag is not shrinking. Only samples
// after the last backwards move of the committed offset (a reset) are used.
func Rate(samples []Sample) (msgsPerSec float64, catchUp time.Duration, ok bool) {
	s := usable(samples)
	for i := len(s) - 1; i > 0; i-- {
		if s[i].Committed < s[i-1].Committed {
			s = s[i:]
			break
		}
	}
	if len(s) < 2 || !s[len(s)-1].At.After(s[0].At) {
		return 0, 0, false
	}
	t0 := s[0].At
	xs := make([]float64, len(s))
	committed := make([]float64, len(s))
	lags := make([]float64, len(s))
	for i, v := range s {
		xs[i] = v.At.Sub(t0).Seconds()
		committed[i] = float64(v.Committed)
		lags[i] = float64(v.Lag)
	}
	msgsPerSec = math.Max(slope(xs, committed), 0)
	last := s[len(s)-1].Lag
	switch lagSlope := slope(xs, lags); {
	case last <= 0:
		catchUp = 0
	case lagSlope >= 0:
		catchUp = -1
	default:
		catchUp = time.Duration(float64(last) / -lagSlope * float64(time.Second))
		if catchUp <= 0 { // overflowed or rounded away
			catchUp = -1
		}
	}
	return msgsPerSec, catchUp, true
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var num, den float64
	for i := range xs {
		dx := xs[i] - mx
		num += dx * (ys[i] - my)
		den += dx * dx
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// usable returns the samples with a known lag, sorted by time (the input is not modified).
func usable(samples []Sample) []Sample {
	out := make([]Sample, 0, len(samples))
	for _, s := range samples {
		if s.Lag >= 0 && !s.At.IsZero() {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// num formats n with thousands separators: 4800 → "4,800".
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

// dur formats a duration for people: "45s", "6m", "1h20m", "3d4h".
func dur(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	default:
		days, h := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
		if h == 0 {
			return fmt.Sprintf("%dd", days)
		}
		return fmt.Sprintf("%dd%dh", days, h)
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
