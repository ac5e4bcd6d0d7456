package lag

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/ops"
)

// Sample is one observation of a group's position on one partition, taken by the sampler.
type Sample struct {
	At        time.Time
	Committed int64 // committed offset, -1 if none
	End       int64 // log end offset
	Lag       int64 // as in PartitionLag; -1 if unknown (such samples are ignored)
	// TimeLag is as in PartitionLag (0 caught up, -1 unknown); it is judged only against
	// Rules.WarnAfter and ErrorAfter, which are off by default.
	TimeLag time.Duration
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
	// StatusWarn: the lag rose at every sample of the evaluation window (samples taken within half
	// a sampling interval of each other count as one), never touched zero, and grew by at least
	// Rules.WarnMinLag in all.
	StatusWarn StatusCode = "WARN"
	// StatusStall: members exist and there is lag, but the committed offset did not move for a
	// whole window — consumers are alive but stuck (a poison message, a blocked handler).
	StatusStall StatusCode = "STALL"
	// StatusStop: lag and no commit movement for longer than Rules.StopAfter.
	StatusStop StatusCode = "STOP"
	// StatusErr: the consumer moves but is further behind in time than
	// Rules.ErrorAfterSeconds (Burrow's ERR). Only with that threshold set.
	StatusErr StatusCode = "ERR"
)

// Severity orders codes for "worst of": OK 0, EMPTY and DEAD 1, WARN 2, ERR and STALL 3, STOP 4.
// As in Burrow (OK < WARN < ERR < STOP < STALL, a group with a STOP or STALL partition being ERR),
// WARN is below every verdict that says the consumer does not move; STOP ranks above STALL here
// because it is the same stuck offset for longer than Rules.StopAfter.
func (s StatusCode) Severity() int {
	switch s {
	case StatusEmpty, StatusDead:
		return 1
	case StatusWarn:
		return 2
	case StatusStall, StatusErr:
		return 3
	case StatusStop:
		return 4
	default:
		return 0
	}
}

// Status is a verdict with a one-line reason for people ("lag rose at every sample: 1,200 → 2,000
// → 4,800 over 5m"; a group's reason names its partitions). Reason is empty for OK.
type Status struct {
	Code   StatusCode
	Reason string
	// Since is when the finding began as far as the samples show: the committed offset's last
	// move (STOP, STALL; at most the oldest sample kept, as "stuck for" says), the first sample of
	// the rise (WARN). Zero when the samples do not say: OK, EMPTY, DEAD, and a verdict on the
	// time lag, which tells how far behind the consumer is, not since when. A group's is its
	// earliest partition's among those that share its status.
	Since time.Time
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

// Rules are a Kafka cluster's Burrow-style status thresholds (kafka[].lag in the configuration).
// A zero field takes its default: Window 5m, StopAfter 15m, WarnMinLag 1; WarnAfter and ErrorAfter
// (time lag) are off at zero.
type Rules struct {
	Window     time.Duration // the evaluation window
	StopAfter  time.Duration // no commit for longer than this with lag > 0 → STOP
	WarnMinLag int64         // growth below this is noise
	// WarnAfter makes a group with members WARN when its next record to consume is older than
	// this (time lag); ErrorAfter makes it ERR. Above WarnAfter when both are set.
	WarnAfter  time.Duration
	ErrorAfter time.Duration
}

// Evaluate judges one partition of a group from its samples, following Burrow's rules. It is pure:
// the sampler calls it with stored history, tests with tables. every is the sampling interval the
// samples were taken at (0: unknown, every sample counts on its own); state and members are the
// group's current Kafka state and member count. Rules, from first match:
//
//   - state Dead → DEAD; state Empty → EMPTY (the reason mentions any lag left behind);
//   - no lag now, or the lag was zero at any sample of the window → OK (Burrow's rule 1: a
//     consumer that caught up at some point in the window keeps up);
//   - lag > 0 and the committed offset has not moved for longer than rules.StopAfter → STOP;
//   - lag > 0, members > 0 and the committed offset did not move during the whole window → STALL;
//   - lag > 0, members > 0, the lag rose at every sample of the window (as for WARN below) and the
//     committed offset did not move at any of them → STALL, as soon as the window shows the rise:
//     Burrow checks a stalled offset before a rising lag, and its WARN is a consumer that moves
//     but falls behind, so a stuck consumer is never WARN first;
//   - the lag rose at every sample of the window (strictly, over at least three samples) and by at
//     least rules.WarnMinLag in all → WARN. Samples less than half of every apart are one moment
//     (a refresh-on-view sample lands a fraction of a second after a scheduled one, with the same
//     lag): the lag must be higher at each sample than at every sample at least that much
//     earlier, so a lag flat over half an interval or more (a plateau), or lower than it was (a
//     fall), breaks the rise, and how many people look does not change the verdict;
//   - otherwise OK: a steady or fluctuating lag that is being consumed is normal.
//
// Then, when the rules set time thresholds and the group has members, a newest time lag above
// rules.ErrorAfter raises a verdict below ERR to ERR, and one above
// rules.WarnAfter raises OK to WARN ("14m behind (warn after 10m)").
//
// The window ends at the newest sample. "Not moved for d" is known only as far back as the samples
// reach: the committed offset is taken as stuck since the oldest sample of the newest run of equal
// committed offsets. Reasons never show the -1 of an offset that was never committed.
func Evaluate(rules Rules, every time.Duration, state string, members int, samples []Sample, now time.Time) Status {
	return evaluate(rules, every, state, members, samples, now).status
}

// finding is which rule decided a verdict; EvaluateGroup words the partitions that share one
// together.
type finding int

const (
	foundNothing    finding = iota
	foundDead               // the group is dead
	foundIdle               // no members, no lag
	foundLeft               // no members, lag left behind
	foundLeftNever          // no members, never committed, lag
	foundStop               // no commit for longer than StopAfter
	foundStopNever          // never committed for longer than StopAfter
	foundStall              // committed offset stuck for a window, with members
	foundStallNever         // never committed for a window, with members
	foundRising             // lag rose at every sample of the window
	foundBehind             // time lag above a threshold (WARN or ERR)
)

// verdict is a Status with the facts its reason was worded from.
type verdict struct {
	status  Status
	found   finding
	lag     int64         // the newest lag
	offset  int64         // the committed offset (foundStop, foundStall)
	stuck   time.Duration // how long the committed offset has not moved
	members int
	window  []Sample      // the window's samples that show the rise, one per moment (foundRising)
	behind  time.Duration // the newest time lag (foundBehind)
	limit   time.Duration // the threshold it passed (foundBehind)
	// share words the finding for a share group, whose position is the share-partition start
	// offset (acknowledgements move it), not a committed offset.
	share bool
}

// minRisingSamples is how many samples must rise one after the other for WARN: with two, a single
// increase between two samples would be enough, and that is noise.
const minRisingSamples = 3

func evaluate(rules Rules, every time.Duration, state string, members int, samples []Sample, now time.Time) verdict {
	v := evaluateOffsets(rules, every, state, members, samples, now)
	if state == "Dead" || state == "Empty" || (rules.WarnAfter <= 0 && rules.ErrorAfter <= 0) {
		return v
	}
	s := usable(samples)
	if len(s) == 0 || s[len(s)-1].Lag <= 0 || s[len(s)-1].TimeLag <= 0 {
		return v
	}
	last := s[len(s)-1]
	errAfter, warnAfter := rules.ErrorAfter, rules.WarnAfter
	b := verdict{found: foundBehind, lag: last.Lag, offset: last.Committed, members: members, behind: last.TimeLag}
	switch {
	case errAfter > 0 && last.TimeLag > errAfter && v.status.Code.Severity() < StatusErr.Severity():
		b.status.Code, b.limit = StatusErr, errAfter
	case warnAfter > 0 && last.TimeLag > warnAfter && v.status.Code.Severity() < StatusWarn.Severity():
		b.status.Code, b.limit = StatusWarn, warnAfter
	default:
		return v
	}
	b.status.Reason = b.describe(nil, "")
	return b
}

func evaluateOffsets(rules Rules, every time.Duration, state string, members int, samples []Sample, now time.Time) verdict {
	s := usable(samples)
	var last *Sample
	if len(s) > 0 {
		last = &s[len(s)-1]
	}
	switch state {
	case "Dead":
		return verdict{status: Status{Code: StatusDead, Reason: "group is dead: no members and no state on the coordinator"}, found: foundDead}
	case "Empty":
		switch {
		case last == nil || last.Lag <= 0:
			return verdict{status: Status{Code: StatusEmpty, Reason: "no members"}, found: foundIdle}
		case last.Committed < 0:
			v := verdict{found: foundLeftNever, lag: last.Lag}
			v.status = Status{Code: StatusEmpty, Reason: v.describe(nil, "")}
			return v
		default:
			v := verdict{found: foundLeft, lag: last.Lag}
			v.status = Status{Code: StatusEmpty, Reason: v.describe(nil, "")}
			return v
		}
	}
	if last == nil || last.Lag == 0 {
		return verdict{status: Status{Code: StatusOK}}
	}
	window, stopAfter := rules.Window, rules.StopAfter
	if window <= 0 {
		window = 5 * time.Minute
	}
	if stopAfter <= 0 {
		stopAfter = 15 * time.Minute
	}
	minGrowth := max(rules.WarnMinLag, 1)

	from := last.At.Add(-window)
	first := len(s) - 1
	for first > 0 && !s[first-1].At.Before(from) {
		first--
	}
	win := s[first:]
	for _, x := range win {
		if x.Lag == 0 {
			return verdict{status: Status{Code: StatusOK}}
		}
	}

	since := last.At
	for i := len(s) - 2; i >= 0 && s[i].Committed == last.Committed; i-- {
		since = s[i].At
	}
	v := verdict{lag: last.Lag, offset: last.Committed, stuck: now.Sub(since), members: members}
	never := last.Committed < 0
	switch {
	case v.stuck > stopAfter && never:
		v.status.Code, v.found = StatusStop, foundStopNever
	case v.stuck > stopAfter:
		v.status.Code, v.found = StatusStop, foundStop
	case members > 0 && v.stuck >= window && never:
		v.status.Code, v.found = StatusStall, foundStallNever
	case members > 0 && v.stuck >= window:
		v.status.Code, v.found = StatusStall, foundStall
	case !rose(win, every, minGrowth):
		return verdict{status: Status{Code: StatusOK}}
	case members > 0 && !since.After(win[0].At) && never:
		// Burrow's order: a committed offset that does not move is STALL before a rising lag is
		// WARN (WARN is a consumer that moves but falls behind), from the first window that shows
		// the rise, not a whole window later.
		v.status.Code, v.found = StatusStall, foundStallNever
	case members > 0 && !since.After(win[0].At):
		v.status.Code, v.found = StatusStall, foundStall
	default:
		v.status.Code, v.found, v.window = StatusWarn, foundRising, risingShown(win, every)
	}
	v.status.Since = since
	if v.found == foundRising {
		v.status.Since = v.window[0].At
	}
	v.status.Reason = v.describe(nil, "")
	return v
}

// rose reports whether the lag rose at every sample of win, over at least minRisingSamples moments,
// and by at least minGrowth in all. Samples less than every/2 apart are one moment: each sample's
// lag must be above that of every sample at least every/2 older (with every 0, of every older
// sample: a strict rise from sample to sample).
func rose(win []Sample, every time.Duration, minGrowth int64) bool {
	if len(win) == 0 || win[len(win)-1].Lag-win[0].Lag < minGrowth {
		return false
	}
	near := every / 2
	older, highest := 0, int64(-1) // win[:older] are at least near older than the sample judged
	for j := range win {
		for older < j && win[j].At.Sub(win[older].At) >= near {
			highest = max(highest, win[older].Lag)
			older++
		}
		if older > 0 && win[j].Lag <= highest {
			return false
		}
	}
	return moments(win, every, nil) >= minRisingSamples
}

// risingShown is the samples a rise is told by: the first of each moment (samples less than every/2
// apart), the newest in place of the last moment's first, so it ends at the lag now.
func risingShown(win []Sample, every time.Duration) []Sample {
	shown := make([]Sample, 0, moments(win, every, nil)) // a copy: the last is replaced below
	moments(win, every, func(x Sample) { shown = append(shown, x) })
	shown[len(shown)-1] = win[len(win)-1]
	return shown
}

// moments counts the moments of win (samples less than every/2 apart are one) and gives each
// moment's first sample to first, when it is not nil. rose only counts them: a partition is judged
// every round, and building the list each time was most of what a round allocated.
func moments(win []Sample, every time.Duration, first func(Sample)) int {
	n, at := 0, time.Time{}
	for i, x := range win {
		if i == 0 || x.At.Sub(at) >= every/2 {
			n, at = n+1, x.At
			if first != nil {
				first(x)
			}
		}
	}
	return n
}

// describe words v's finding, together with others that share it (nil for a partition alone);
// where names the partitions (" on partitions 1, 2"), "" for a partition's own reason.
func (v verdict) describe(others []verdict, where string) string {
	all := append([]verdict{v}, others...)
	var lag int64
	stuck := v.stuck
	for _, o := range all {
		lag += o.lag
		stuck = min(stuck, o.stuck)
	}
	single := len(all) == 1
	// "for 16m" is true of every partition when it is the shortest time any of them is stuck.
	stuckText := dur(stuck)
	if !single && slices.ContainsFunc(all, func(o verdict) bool { return dur(o.stuck) != stuckText }) {
		stuckText += " or more"
	}
	if v.share {
		switch v.found {
		case foundLeft, foundLeftNever:
			return fmt.Sprintf("no members; %s not yet acknowledged%s", ops.Plural(lag, "record"), where)
		case foundStop, foundStopNever:
			if single && v.offset >= 0 {
				return fmt.Sprintf("no acknowledgement moved the start offset for %s%s (start offset %s), lag %s", stuckText, where, ops.FormatNum(v.offset), ops.FormatNum(lag))
			}
			return fmt.Sprintf("no acknowledgement moved the start offsets for %s%s, lag %s", stuckText, where, ops.FormatNum(lag))
		case foundStall, foundStallNever:
			if single && v.offset >= 0 {
				return fmt.Sprintf("start offset stuck at %s for %s%s with %s, lag %s", ops.FormatNum(v.offset), stuckText, where, ops.Plural(int64(v.members), "member"), ops.FormatNum(lag))
			}
			return fmt.Sprintf("start offsets stuck for %s%s with %s, lag %s", stuckText, where, ops.Plural(int64(v.members), "member"), ops.FormatNum(lag))
		}
	}
	switch v.found {
	case foundLeft:
		return fmt.Sprintf("no members; lag %s left unconsumed%s", ops.FormatNum(lag), where)
	case foundLeftNever:
		return fmt.Sprintf("no members; never committed%s, lag %s left unconsumed", where, ops.FormatNum(lag))
	case foundStop:
		if single {
			return fmt.Sprintf("no commit for %s%s (committed offset %s), lag %s", stuckText, where, ops.FormatNum(v.offset), ops.FormatNum(lag))
		}
		return fmt.Sprintf("no commit for %s%s, lag %s", stuckText, where, ops.FormatNum(lag))
	case foundStopNever:
		return fmt.Sprintf("never committed%s (no commit seen in %s), lag %s", where, stuckText, ops.FormatNum(lag))
	case foundStall:
		if single {
			return fmt.Sprintf("committed offset stuck at %s for %s%s with %s, lag %s", ops.FormatNum(v.offset), stuckText, where, ops.Plural(int64(v.members), "member"), ops.FormatNum(lag))
		}
		return fmt.Sprintf("committed offsets stuck for %s%s with %s, lag %s", stuckText, where, ops.Plural(int64(v.members), "member"), ops.FormatNum(lag))
	case foundStallNever:
		return fmt.Sprintf("never committed%s (no commit seen in %s) with %s, lag %s", where, stuckText, ops.Plural(int64(v.members), "member"), ops.FormatNum(lag))
	case foundBehind:
		behind := v.behind
		for _, o := range all {
			behind = max(behind, o.behind)
		}
		word := "warn"
		if v.status.Code == StatusErr {
			word = "error"
		}
		return fmt.Sprintf("%s behind%s (%s after %s), lag %s", dur(behind), where, word, dur(v.limit), ops.FormatNum(lag))
	case foundRising:
		lags, span := risingTotal(all)
		return fmt.Sprintf("lag rose at every sample%s: %s over %s", where, chain(lags), dur(span))
	}
	return v.status.Reason
}

// risingTotal is the summed lag of rising partitions at each sample time they share; when their
// samples were not taken together, the sum of their first lags and the sum of their last lags.
func risingTotal(vs []verdict) ([]int64, time.Duration) {
	if len(vs) == 1 {
		w := vs[0].window
		lags := make([]int64, len(w))
		for i, x := range w {
			lags[i] = x.Lag
		}
		return lags, w[len(w)-1].At.Sub(w[0].At)
	}
	sum := map[time.Time]int64{}
	seen := map[time.Time]int{}
	for _, v := range vs {
		for _, x := range v.window {
			sum[x.At] += x.Lag
			seen[x.At]++
		}
	}
	var at []time.Time
	for t, n := range seen {
		if n == len(vs) {
			at = append(at, t)
		}
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	if len(at) >= 2 {
		lags := make([]int64, len(at))
		for i, t := range at {
			lags[i] = sum[t]
		}
		return lags, at[len(at)-1].Sub(at[0])
	}
	var firstLag, lastLag int64
	var span time.Duration
	for _, v := range vs {
		w := v.window
		firstLag += w[0].Lag
		lastLag += w[len(w)-1].Lag
		span = max(span, w[len(w)-1].At.Sub(w[0].At))
	}
	return []int64{firstLag, lastLag}, span
}

// chain writes lags as "2 → 5 → 9"; a long run keeps its two ends: "1 → 2 → … → 9 → 10".
func chain(lags []int64) string {
	parts := make([]string, 0, 5)
	for i, l := range lags {
		if len(lags) > 5 && i >= 2 && i < len(lags)-2 {
			if i == 2 {
				parts = append(parts, "…")
			}
			continue
		}
		parts = append(parts, ops.FormatNum(l))
	}
	return strings.Join(parts, " → ")
}

// EvaluateGroup evaluates every partition and gives the group the worst partition's status (ties
// go to the larger lag). The group's reason names every partition of that status, worded together
// where they share a finding ("lag rose at every sample on partitions 1, 2: 2 → 5 → 9 over 2m");
// topics are named too when the group reads more than one. A group in state Empty or Dead with no
// partitions still gets EMPTY/DEAD.
func EvaluateGroup(rules Rules, every time.Duration, state string, members int, parts []PartitionSamples, now time.Time) GroupStatus {
	return evaluateGroup(rules, every, state, members, parts, now, false)
}

// EvaluateShareGroup judges a share group (KIP-932) by EvaluateGroup's rules, read in its own
// terms: each sample's Committed is the share-partition start offset (every record below it is
// acknowledged or archived; acknowledgements move it, there are no commits) and Lag the broker's
// lag (records at or above it not yet done). A start offset that does not move while records wait
// is STALL with members and STOP past StopAfter, a lag that rises at every sample WARN, a group
// without members EMPTY; the reasons say "start offset" and "acknowledged", never "commit".
func EvaluateShareGroup(rules Rules, every time.Duration, state string, members int, parts []PartitionSamples, now time.Time) GroupStatus {
	return evaluateGroup(rules, every, state, members, parts, now, true)
}

// EvaluateShare is Evaluate for one partition of a share group (EvaluateShareGroup's terms).
func EvaluateShare(rules Rules, every time.Duration, state string, members int, samples []Sample, now time.Time) Status {
	v := evaluate(rules, every, state, members, samples, now)
	return v.inShareTerms().status
}

// inShareTerms words v for a share group.
func (v verdict) inShareTerms() verdict {
	v.share = true
	switch v.found {
	case foundLeft, foundLeftNever, foundStop, foundStopNever, foundStall, foundStallNever:
		v.status.Reason = v.describe(nil, "")
	}
	return v
}

func evaluateGroup(rules Rules, every time.Duration, state string, members int, parts []PartitionSamples, now time.Time, share bool) GroupStatus {
	gs := GroupStatus{Partitions: make([]PartitionStatus, 0, len(parts))}
	verdicts := make([]verdict, len(parts))
	worst, worstLag := -1, int64(-1)
	topics := map[string]bool{}
	for i, p := range parts {
		topics[p.Topic] = true
		v := evaluate(rules, every, state, members, p.Samples, now)
		if share {
			v = v.inShareTerms()
		}
		verdicts[i] = v
		gs.Partitions = append(gs.Partitions, PartitionStatus{Topic: p.Topic, Partition: p.Partition, Status: v.status})
		lag := int64(-1)
		if u := usable(p.Samples); len(u) > 0 {
			lag = u[len(u)-1].Lag
		}
		if worst < 0 || v.status.Code.Severity() > verdicts[worst].status.Code.Severity() ||
			(v.status.Code.Severity() == verdicts[worst].status.Code.Severity() && lag > worstLag) {
			worst, worstLag = i, lag
		}
	}
	switch {
	case worst >= 0:
		w := gs.Partitions[worst]
		gs.Worst = &w
		gs.Status = Status{Code: w.Status.Code, Reason: groupReason(parts, verdicts, worst, len(topics) > 1), Since: earliestSince(verdicts, w.Status.Code)}
	case (state == "Dead" || state == "Empty") && share:
		gs.Status = EvaluateShare(rules, every, state, members, nil, now)
	case state == "Dead" || state == "Empty":
		gs.Status = Evaluate(rules, every, state, members, nil, now)
	default:
		gs.Status = Status{Code: StatusOK}
	}
	return gs
}

// earliestSince is the earliest known Since of the verdicts with code: the group has had the
// problem since its first partition did.
func earliestSince(vs []verdict, code StatusCode) time.Time {
	var since time.Time
	for _, v := range vs {
		if s := v.status.Since; v.status.Code == code && !s.IsZero() && (since.IsZero() || s.Before(since)) {
			since = s
		}
	}
	return since
}

// groupReason words the findings of the partitions that share the worst one's status, the worst
// one's finding first, the others by their lag.
func groupReason(parts []PartitionSamples, vs []verdict, worst int, namedTopics bool) string {
	code := vs[worst].status.Code
	byFinding := map[finding][]int{}
	var order []finding
	for i, v := range vs {
		if v.status.Code != code {
			continue
		}
		if _, ok := byFinding[v.found]; !ok {
			order = append(order, v.found)
		}
		byFinding[v.found] = append(byFinding[v.found], i)
	}
	switch vs[worst].found {
	case foundNothing, foundDead, foundIdle:
		return vs[worst].status.Reason // about the group, not a partition
	}
	delete(byFinding, foundIdle) // partitions without lag in an idle group with lag elsewhere
	order = slices.DeleteFunc(order, func(f finding) bool { return f == foundIdle })
	lagOf := func(f finding) (n int64) {
		for _, i := range byFinding[f] {
			n += vs[i].lag
		}
		return n
	}
	slices.SortStableFunc(order, func(a, b finding) int {
		switch {
		case a == vs[worst].found:
			return -1
		case b == vs[worst].found:
			return 1
		}
		return cmp.Compare(lagOf(b), lagOf(a))
	})
	texts := make([]string, 0, len(order))
	for _, f := range order {
		idx := byFinding[f]
		named := make([]PartitionSamples, len(idx))
		rest := make([]verdict, 0, len(idx)-1)
		for j, i := range idx {
			named[j] = parts[i]
			if j > 0 {
				rest = append(rest, vs[i])
			}
		}
		text := vs[idx[0]].describe(rest, " on "+partitionNames(named, namedTopics))
		if code == StatusEmpty && len(texts) > 0 {
			text = strings.TrimPrefix(text, "no members; ")
		}
		texts = append(texts, text)
	}
	return strings.Join(texts, "; ")
}

// maxNamed is how many partitions (or runs of them) a reason lists before "and N more".
const maxNamed = 8

// partitionNames names partitions for people: "partition 2", "partitions 0–3, 7"; with topics,
// "orders partitions 1, 2 and refunds partition 0".
func partitionNames(ps []PartitionSamples, withTopics bool) string {
	byTopic := map[string][]int32{}
	var topics []string
	for _, p := range ps {
		t := p.Topic
		if !withTopics {
			t = ""
		}
		if _, ok := byTopic[t]; !ok {
			topics = append(topics, t)
		}
		byTopic[t] = append(byTopic[t], p.Partition)
	}
	slices.Sort(topics)
	out := make([]string, 0, len(topics))
	budget := maxNamed
	for _, t := range topics {
		nums := byTopic[t]
		slices.Sort(nums)
		nums = slices.Compact(nums)
		var runs []string
		for i := 0; i < len(nums); {
			j := i
			for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
				j++
			}
			switch {
			case j-i >= 2:
				runs = append(runs, fmt.Sprintf("%d–%d", nums[i], nums[j]))
			case j > i:
				runs = append(runs, strconv.Itoa(int(nums[i])), strconv.Itoa(int(nums[j])))
			default:
				runs = append(runs, strconv.Itoa(int(nums[i])))
			}
			i = j + 1
		}
		more := ""
		if len(runs) > budget {
			hidden := 0
			for _, r := range runs[max(budget, 1):] {
				if a, b, ok := strings.Cut(r, "–"); ok {
					x, _ := strconv.Atoi(a)
					y, _ := strconv.Atoi(b)
					hidden += y - x + 1
				} else {
					hidden++
				}
			}
			runs = runs[:max(budget, 1)]
			more = fmt.Sprintf(" and %d more", hidden)
		}
		budget = max(budget-len(runs), 0)
		word := "partitions "
		if len(nums) == 1 {
			word = "partition "
		}
		if t != "" {
			word = t + " " + word
		}
		out = append(out, word+strings.Join(runs, ", ")+more)
	}
	return strings.Join(out, " and ")
}

// ProducedRate is the rate at which records were appended to a partition (messages per second,
// the least-squares slope of its end offset) over samples; only those after the last backwards
// move of the end offset (the topic was recreated) count. ok is false with fewer than two usable
// samples spanning some time.
func ProducedRate(samples []Sample) (msgsPerSec float64, ok bool) {
	s := producedSamples(samples)
	if !spans(s) {
		return 0, false
	}
	return math.Max(fitOf(s).end, 0), true
}

// spans reports whether s holds two samples or more spanning some time: what a slope needs.
func spans(s []Sample) bool { return len(s) >= 2 && s[len(s)-1].At.After(s[0].At) }

// producedSamples are the samples ProducedRate reads: with a known end offset and time, after the
// last backwards move of the end offset. samples itself when that is all of them.
func producedSamples(samples []Sample) []Sample {
	s := samples
	if slices.ContainsFunc(s, func(x Sample) bool { return x.End < 0 || x.At.IsZero() }) {
		s = slices.DeleteFunc(slices.Clone(s), func(x Sample) bool { return x.End < 0 || x.At.IsZero() })
	}
	for i := len(s) - 1; i > 0; i-- {
		if s[i].End < s[i-1].End {
			return s[i:]
		}
	}
	return s
}

// Rate estimates the consumption rate (messages per second, from the least-squares slope of the
// committed offset) and the time to catch up (current lag over the rate at which lag shrinks, from
// the slope of the lag). ok is false with fewer than two usable samples spanning some time. A
// catch-up of 0 means no lag; a negative catch-up means the lag is not shrinking. Only samples
// after the last backwards move of the committed offset (a reset) are used.
func Rate(samples []Sample) (msgsPerSec float64, catchUp time.Duration, ok bool) {
	s := consumedSamples(samples)
	if !spans(s) {
		return 0, 0, false
	}
	msgsPerSec, catchUp = fitOf(s).consumption(s[len(s)-1].Lag)
	return msgsPerSec, catchUp, true
}

// consumedSamples are the samples Rate reads: usable ones after the last backwards move of the
// committed offset.
func consumedSamples(samples []Sample) []Sample {
	s := usable(samples)
	for i := len(s) - 1; i > 0; i-- {
		if s[i].Committed < s[i-1].Committed {
			return s[i:]
		}
	}
	return s
}

// Rates is what one partition's window says about its pace: Rate's and ProducedRate's answers.
type Rates struct {
	Consumed float64       // Rate's msgsPerSec
	CatchUp  time.Duration // Rate's catchUp
	Known    bool          // Rate's ok
	Produced float64       // ProducedRate's msgsPerSec
	// ProducedKnown is ProducedRate's ok.
	ProducedKnown bool
}

// RatesOf is Rate and ProducedRate of one window. When both read the same samples (no reset, no
// unknown end offset: what the sampler holds but for a recreated topic) the three slopes come from
// one pass over them; the sampler asks this of every partition every round.
func RatesOf(samples []Sample) Rates {
	var r Rates
	c, p := consumedSamples(samples), producedSamples(samples)
	if spans(c) {
		f := fitOf(c)
		r.Consumed, r.CatchUp = f.consumption(c[len(c)-1].Lag)
		r.Known = true
		if len(p) == len(c) && &p[0] == &c[0] { // the same samples: their end offsets' fit is made
			r.Produced, r.ProducedKnown = math.Max(f.end, 0), true
			return r
		}
	}
	if spans(p) {
		r.Produced, r.ProducedKnown = math.Max(fitOf(p).end, 0), true
	}
	return r
}

// GroupCatchUp is the time a group needs to consume its lag: the longest of its partitions' catch-up
// times (Rate's, each from that partition's own samples), because a group has caught up only when
// every partition has. A partition whose lag is not shrinking makes the whole group not catching
// up (< 0), however fast the others go: the total lag's slope hides exactly that case — a stalled
// partition's slow growth under a busy partition's fast drain reads as "catching up in minutes".
// 0 means no lag anywhere; a partition whose lag was zero in the window and is now less than it
// consumes between two samples counts as caught up. groupWindow (the total lag's samples) answers only for partitions too
// new to have a rate of their own, and never shortens what the known partitions need. ok is false
// when neither the partitions nor the group's window hold two usable samples.
func GroupCatchUp(parts []PartitionSamples, groupWindow []Sample) (catchUp time.Duration, ok bool) {
	return GroupCatchUpOf(parts, nil, groupWindow)
}

// GroupCatchUpOf is GroupCatchUp with the partitions' rates already computed (RatesOf of each of
// parts, in their order); nil computes them.
func GroupCatchUpOf(parts []PartitionSamples, rates []Rates, groupWindow []Sample) (catchUp time.Duration, ok bool) {
	unknown := false
	for i, p := range parts {
		if len(p.Samples) == 0 || p.Samples[len(p.Samples)-1].Lag <= 0 {
			continue // no lag here (or no sample of it: the group's window speaks for it below)
		}
		var r Rates
		if rates != nil {
			r = rates[i]
		} else {
			r.Consumed, r.CatchUp, r.Known = Rate(p.Samples)
		}
		switch {
		case !r.Known:
			unknown = true
		case touchedZero(p.Samples) && float64(p.Samples[len(p.Samples)-1].Lag) <= r.Consumed*sampleSpacing(p.Samples).Seconds():
			// Caught up within the window and now less behind than it consumes between two
			// samples: live, whatever way the last few messages tilted the slope (a healthy
			// partition's lag jitters between 0 and what arrives between two commits, which a
			// slope reads as hours or as "never" by turns). Burrow's rule: zero once is keeping up.
			ok = true
		case r.CatchUp < 0:
			return -1, true
		default:
			catchUp = max(catchUp, r.CatchUp)
			ok = true
		}
	}
	if !unknown && ok {
		return catchUp, true
	}
	_, total, tok := Rate(groupWindow)
	switch {
	case !tok:
		return catchUp, ok
	case total < 0:
		return -1, true
	}
	return max(catchUp, total), true
}

// touchedZero reports whether the lag was zero at any of the samples.
func touchedZero(s []Sample) bool {
	return slices.ContainsFunc(s, func(x Sample) bool { return x.Lag == 0 })
}

// sampleSpacing is the mean time between two of the samples, at least a second.
func sampleSpacing(s []Sample) time.Duration {
	if len(s) < 2 {
		return time.Second
	}
	return max(time.Second, s[len(s)-1].At.Sub(s[0].At)/time.Duration(len(s)-1))
}

// fit is the least-squares slopes of a window's committed offset, lag and end offset over its
// samples' times, in units per second.
type fit struct{ committed, lag, end float64 }

// fitOf fits the three lines in one pass pair (the means, then the centred sums) over the samples'
// times as integer nanoseconds from the first: 10,000 partitions a round, several slopes each, made
// time.Time arithmetic most of a round's judging.
func fitOf(s []Sample) fit {
	n := float64(len(s))
	t0 := s[0].At.UnixNano()
	var sx, sc, sl, se float64
	for _, v := range s {
		sx += float64(v.At.UnixNano()-t0) / 1e9
		sc += float64(v.Committed)
		sl += float64(v.Lag)
		se += float64(v.End)
	}
	mx, mc, ml, me := sx/n, sc/n, sl/n, se/n
	var den, nc, nl, ne float64
	for _, v := range s {
		dx := float64(v.At.UnixNano()-t0)/1e9 - mx
		den += dx * dx
		nc += dx * (float64(v.Committed) - mc)
		nl += dx * (float64(v.Lag) - ml)
		ne += dx * (float64(v.End) - me)
	}
	if den == 0 {
		return fit{}
	}
	return fit{committed: nc / den, lag: nl / den, end: ne / den}
}

// consumption is Rate's answer from the fit of its samples and the newest lag.
func (f fit) consumption(last int64) (msgsPerSec float64, catchUp time.Duration) {
	msgsPerSec = math.Max(f.committed, 0)
	switch {
	case last <= 0:
		catchUp = 0
	case f.lag >= 0:
		catchUp = -1
	default:
		catchUp = time.Duration(float64(last) / -f.lag * float64(time.Second))
		if catchUp <= 0 { // overflowed or rounded away
			catchUp = -1
		}
	}
	return msgsPerSec, catchUp
}

// usable returns the samples with a known lag, sorted by time. The input is not modified: when
// every sample is usable and in order — what the sampler always holds — it is returned as it is,
// with no copy (the sampler judges 10,000 partitions a round, and copying each window three times
// was most of what a round allocated).
func usable(samples []Sample) []Sample {
	clean := true
	for i, s := range samples {
		if s.Lag < 0 || s.At.IsZero() || (i > 0 && s.At.Before(samples[i-1].At)) {
			clean = false
			break
		}
	}
	if clean {
		return samples
	}
	out := make([]Sample, 0, len(samples))
	for _, s := range samples {
		if s.Lag >= 0 && !s.At.IsZero() {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Sample) int { return a.At.Compare(b.At) })
	return out
}

// dur is a duration in a status's reason, written as the console writes every age (ops.FormatAge:
// "7 min", "1 h 20 min", "3 d 4 h"), as precise as a status needs: seconds under a minute, whole
// minutes under a day, whole hours beyond.
func dur(d time.Duration) string {
	switch {
	case d < time.Minute:
		d = d.Round(time.Second)
	case d < 24*time.Hour:
		d = d.Truncate(time.Minute)
	default:
		d = d.Truncate(time.Hour)
	}
	return ops.FormatAge(d)
}
