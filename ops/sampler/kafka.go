package sampler

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/lease"
)

// KafkaGroups is what the sampler needs of a Kafka cluster; *kafka.Cluster implements it. Groups
// errors carry the ops kinds (ErrUnavailable when the cluster cannot be reached).
type KafkaGroups interface {
	Name() string
	Groups(ctx context.Context) ([]kafkamodel.Group, error)
}

// deadLetterLister is a cluster that also lists its dead-letter topics (*kafka.Cluster does).
type deadLetterLister interface {
	DeadLetterTopics(ctx context.Context) ([]kafkamodel.DLTopic, error)
}

// transactionLister is a cluster that also lists the transactions open on its partitions
// (*kafka.Cluster does): they ride along in the snapshot, where the overview and the group pages
// read them.
type transactionLister interface {
	OpenTransactions(ctx context.Context) ([]kafkamodel.OpenTransaction, error)
}

// errorGroupReader is a cluster that reads the error groups of what arrived in a topic since a
// cursor (*kafka.Cluster does): the sampler records them so that a new one can be told.
type errorGroupReader interface {
	ErrorGroupsSince(ctx context.Context, topic string, next map[int32]int64, maxScan int) (kafkamodel.ErrorScan, map[int32]int64, error)
}

// KafkaSource is one cluster to sample and the rules its groups are judged by.
type KafkaSource struct {
	Cluster KafkaGroups // required
	// Rules are the cluster's status thresholds (kafka[].lag). Zero fields mean
	// lag.Evaluate's defaults: a 5 m window, STOP after 15 m, WARN on any growth.
	Rules lag.Rules
}

// TopPartitions is the number of partition series KafkaGroupHistory returns beside the total.
const TopPartitions = 5

// MaxHistoryPoints bounds KafkaGroupHistory's maxPoints.
const MaxHistoryPoints = history.MaxHistoryPoints

// kafkaState is the leader's memory of one cluster: a window of samples per partition, which
// statuses and rates are computed from. It is touched only under Sampler.tickMu.
type kafkaState struct {
	src    KafkaSource
	name   string
	window time.Duration // the rules' evaluation window, which rates are also computed over
	every  time.Duration // the sampling interval: the statuses' rule of a rise reads samples by it
	keep   time.Duration // how far back samples are kept: enough to tell STALL and STOP
	warm   bool          // the windows were loaded from the store since leadership was taken
	token  int64         // the lease token the windows were loaded under
	lastAt time.Time     // newest sample stored, so that history keys stay unique
	// seen is, per dead-letter topic, where the last round's error-group read ended. It starts
	// empty with each leadership (the first round reads the newest records again; the store's
	// rows make that harmless).
	seen map[string]dltCursor
	// refusedRounds counts the rounds in a row in which the store took none of the error groups
	// read (recordErrorGroups).
	refusedRounds int
	// ends are, per dead-letter or retry topic, its summed end offsets at the samples of the
	// window: their slope is the topic's inflow.
	ends   map[string][]lag.Sample
	groups map[string]*groupWindow
	// unpacked and parts are observe's buffers for one group's windows, reused from group to group
	// and round to round.
	unpacked []lag.Sample
	parts    []lag.PartitionSamples
	// tried is the time (sampler clock, Unix nanoseconds) of this replica's last finished sample
	// of the cluster, good or failed; FreshKafka reads it without tickMu.
	tried atomic.Int64
	// refreshing is the on-demand sample in flight (refresh), closed when it is over; nil when
	// none is. Every read during a re-sample joins it with one lock, no goroutine of its own.
	refreshMu  sync.Mutex
	refreshing chan struct{}
}

type partKey struct {
	topic     string
	partition int32
}

type groupWindow struct {
	parts map[partKey]series
	// total is the group as a whole (summed committed offsets, total lag): the catch-up estimate
	// comes from its lag slope.
	total []lag.Sample
}

func newKafkaState(src KafkaSource, interval time.Duration) *kafkaState {
	st := &kafkaState{src: src, name: src.Cluster.Name(), groups: map[string]*groupWindow{}}
	st.setRules(src.Rules, interval)
	return st
}

// setRules puts a cluster's thresholds in force; the sample windows kept so far stay (a longer
// window fills up as samples arrive). Called under Sampler.tickMu.
func (st *kafkaState) setRules(r lag.Rules, interval time.Duration) {
	window, stop := r.Window, r.StopAfter
	if window <= 0 {
		window = 5 * time.Minute
	}
	if stop <= 0 {
		stop = 15 * time.Minute
	}
	st.src.Rules, st.window, st.keep, st.every = r, window, max(window, stop)+2*interval, interval
}

// SetLagRules changes the status thresholds of a cluster at run time (a config reload): the next
// sample judges its groups by them. It waits for a sample in progress. Unknown cluster →
// ops.ErrNotFound.
func (s *Sampler) SetLagRules(cluster string, r lag.Rules) error {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	st, ok := s.kafkaByName[cluster]
	if !ok {
		return ops.NotFound("kafka cluster %q is not configured", cluster)
	}
	st.setRules(r, s.interval)
	return nil
}

// sampleKafka samples one cluster at now and stores the result.
// Its writes carry l's fencing token.
func (s *Sampler) sampleKafka(ctx context.Context, st *kafkaState, l lease.Lease, now time.Time) (err error) {
	start := time.Now()
	source := kafkaSourceName(st.name)
	defer func() { s.observe(source, start, err) }()
	// The store keeps microseconds; truncating here makes what is in memory equal what is stored.
	at := now.Round(0).Truncate(time.Microsecond)
	// Set when the sample is done, not when it starts: a viewer arriving meanwhile joins the
	// on-demand sample in flight instead of reading the snapshot it is about to replace.
	defer st.tried.Store(at.UnixNano())

	if st.token != l.Token { // leadership (re)taken: another replica may have sampled meanwhile
		st.warm, st.token = false, l.Token
	}
	if !st.warm {
		s.warmKafka(ctx, st, at)
		st.seen = map[string]dltCursor{}
	}
	groups, err := st.src.Cluster.Groups(ctx)
	if err != nil {
		return s.failedSample(ctx, l, history.SnapshotKafka, st.name, at, err, s.rememberError)
	}

	out, rows := st.observe(groups, at)
	var dlts []kafkamodel.DLTopic
	if l, ok := st.src.Cluster.(deadLetterLister); ok {
		// Sizes of the dead-letter topics ride along (the exporter reads them); a failure to
		// list them does not cost the lag sample.
		if dlts, err = l.DeadLetterTopics(ctx); err != nil {
			s.log.Warn("sampler: listing dead-letter topics failed", "cluster", st.name, "err", err)
			dlts = nil
		}
	}
	if dlts != nil { // nil: the listing failed; keep the inflow history for the next round
		dlts = slices.Clone(dlts) // the listing may be shared with a page's (kafka.Cluster.DeadLetterTopics)
		st.inflows(dlts, at)
	}
	var txns []kafkamodel.OpenTransaction
	if l, ok := st.src.Cluster.(transactionLister); ok {
		// Like the dead-letter sizes: a failure to list them does not cost the lag sample.
		if txns, err = l.OpenTransactions(ctx); err != nil {
			s.log.Warn("sampler: listing open transactions failed", "cluster", st.name, "err", err)
			txns = nil
		}
	}
	data, err := encodeKafka(out, dlts, txns...)
	if err != nil {
		return fmt.Errorf("sampler: kafka %s: %w", st.name, err)
	}
	w := history.SampleWrite{Snapshot: history.Snapshot{Kind: history.SnapshotKafka, Name: st.name, At: at, Data: data}}
	// When the clock did not move (a test's, or a step back) the snapshot is current, but history
	// already has this instant.
	fresh := at.After(st.lastAt)
	if fresh {
		w.Kafka = rows
	}
	if err := s.write(ctx, l, w); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	s.remember(lag.Snapshot{Cluster: st.name, At: at, Groups: out, DeadLetterTopics: dlts, Transactions: txns})
	if fresh {
		st.lastAt = at
	}
	s.recordErrorGroups(ctx, st, dlts)
	return nil
}

// inflows sets each dead-letter and retry topic's inflow over the window from its records that
// arrived (DLTopic.Arrived: data records, counted), or its summed end offsets when the source
// does not count them, at this and the earlier samples.
func (st *kafkaState) inflows(dlts []kafkamodel.DLTopic, at time.Time) {
	next := make(map[string][]lag.Sample, len(dlts))
	for i := range dlts {
		t := &dlts[i]
		var end int64
		for _, p := range t.Partitions {
			end += p.End
		}
		if t.ArrivalsCounted {
			// A transaction's marker takes an offset, and an aborted record is no dead letter.
			end = t.Arrived
		}
		from := at.Add(-st.window)
		win := append(trim(st.ends[t.Topic], from, from), lag.Sample{At: at, End: end})
		next[t.Topic] = win
		t.InflowPerSecond, t.InflowKnown = lag.ProducedRate(windowFrom(win, from))
	}
	st.ends = next
}

// recordErrorGroups folds what arrived in each final dead-letter topic since the last round into
// the store's error groups (store.RecordErrorGroups), after the lag sample is written so that it
// never costs one. A topic that cannot be read is retried from the same cursor next round, and so
// is the round when the store takes none of its groups. A group the store refuses while it takes
// the others (or alone, round after round) is skipped with an error in the log: one bad record
// must not keep every dead-letter topic of the cluster from telling its new errors.
func (s *Sampler) recordErrorGroups(ctx context.Context, st *kafkaState, dlts []kafkamodel.DLTopic) {
	r, ok := st.src.Cluster.(errorGroupReader)
	if !ok {
		return
	}
	var sightings []history.ErrorGroupSighting
	next := map[string]dltCursor{}
	for _, t := range dlts {
		if t.Retry {
			continue
		}
		from := st.seen[t.Topic]
		if from.topicID != t.TopicID { // deleted and created again: none of its records were read
			from.offsets = nil
		}
		scan, cursor, err := r.ErrorGroupsSince(ctx, t.Topic, from.offsets, kafkamodel.DefaultMaxScan)
		if err != nil {
			s.log.Warn("sampler: reading new dead letters failed", "cluster", st.name, "topic", t.Topic, "err", err)
			continue
		}
		next[t.Topic] = dltCursor{topicID: t.TopicID, offsets: cursor}
		for _, g := range scan.Groups {
			maskedBy := ""
			if s.errorSample != nil {
				g.SampleMessage, maskedBy = s.errorSample(g)
			}
			sighting := errorGroupSighting(st.name, t.Topic, g)
			sighting.SampleMaskedBy = maskedBy
			sightings = append(sightings, sighting)
		}
	}
	if err := s.store.RecordErrorGroups(ctx, s.newGroupWindow, sightings); err != nil {
		refused, errs := s.recordEach(ctx, sightings)
		if len(refused) == len(sightings) && (ctx.Err() != nil || st.refusedRounds+1 < maxRefusedRounds) {
			st.refusedRounds++
			s.log.Warn("sampler: recording error groups failed; they are read again next round", "cluster", st.name, "err", err)
			return
		}
		for i, g := range refused {
			s.log.Error("sampler: an error group cannot be recorded and is skipped: it will not be told as new",
				"cluster", st.name, "source", g.Source, "exception_type", g.ExceptionType, "exception_cause", g.ExceptionCause, "err", errs[i])
		}
	}
	st.refusedRounds = 0
	for t, c := range next {
		st.seen[t] = c
	}
}

// dltCursor is where the error-group read of a dead-letter topic ended, and the topic's ID then:
// a topic recreated under the name holds other records at the same offsets, and a cursor of the
// old one would pass over the new one's first records.
type dltCursor struct {
	topicID string
	offsets map[int32]int64
}

// maxRefusedRounds is how many rounds in a row the store must refuse every error group of a cluster,
// each alone, while it takes the rounds' lag samples, before they are skipped as unrecordable
// rather than read again: a store in trouble fails the lag sample first, so this is a record the
// store cannot hold, not an outage.
const maxRefusedRounds = 3

// recordEach records the sightings one at a time (their batch failed, which fails them all) and
// returns those the store refused, with its errors.
func (s *Sampler) recordEach(ctx context.Context, sightings []history.ErrorGroupSighting) ([]history.ErrorGroupSighting, []error) {
	var refused []history.ErrorGroupSighting
	var errs []error
	for i, g := range sightings {
		if ctx.Err() != nil { // out of time: the rest are not tried, and count as refused
			refused = append(refused, sightings[i:]...)
			for range sightings[i:] {
				errs = append(errs, ctx.Err())
			}
			break
		}
		if err := s.store.RecordErrorGroups(ctx, s.newGroupWindow, []history.ErrorGroupSighting{g}); err != nil {
			refused, errs = append(refused, g), append(errs, err)
		}
	}
	return refused, errs
}

// maxErrorGroupText is how much of an exception type or cause an error group keeps, as every
// table keyed by them does (the store's error groups, triage's notes and resolutions).
const maxErrorGroupText = 500

// errorGroupSighting is what the store records of one error group of a dead-letter topic. Its key
// is the group as the topic's error groups page tells it, exception type | cause, of the same
// cleaned text (ops.CleanText) the store keeps of them and triage marks them by: a type or cause
// with a NUL byte or invalid UTF-8, which PostgreSQL refuses, is stored and keyed alike.
func errorGroupSighting(cluster, topic string, g kafkamodel.ErrorGroup) history.ErrorGroupSighting {
	typ, cause := ops.CleanText(g.ExceptionType, maxErrorGroupText), ops.CleanText(g.ExceptionCause, maxErrorGroupText)
	return history.ErrorGroupSighting{Source: ErrorGroupSource(cluster, topic), Key: typ + "|" + cause,
		ExceptionType: typ, ExceptionCause: cause, FirstAt: g.FirstAt, LastAt: g.LastAt, Count: g.Count,
		SampleMessage: ops.CleanText(g.SampleMessage, 2000), SamplePartition: g.SamplePartition, SampleOffset: g.SampleOffset}
}

// ErrorGroupSource names a Kafka dead-letter topic in the store's error groups.
func ErrorGroupSource(cluster, topic string) string { return "kafka/" + cluster + "/" + topic }

// warmKafka loads the windows from the store when this replica has just become leader, so the
// statuses judged by the previous leader carry over. A failed load is logged and sampling goes
// on with empty windows: statuses then need one window of fresh samples.
func (s *Sampler) warmKafka(ctx context.Context, st *kafkaState, at time.Time) {
	st.warm = true
	st.groups = map[string]*groupWindow{}
	st.lastAt = time.Time{}
	rows, err := s.store.KafkaGroupSamples(ctx, st.name, "", at.Add(-st.keep))
	if err != nil {
		s.log.Warn("sampler: cannot load recent samples; statuses start afresh", "cluster", st.name, "err", err)
		return
	}
	loaded := map[string]map[partKey][]lag.Sample{}
	for _, r := range rows {
		w := st.groups[r.Group]
		if w == nil {
			w = &groupWindow{parts: map[partKey]series{}}
			st.groups[r.Group] = w
			loaded[r.Group] = map[partKey][]lag.Sample{}
		}
		parts := loaded[r.Group]
		var committed int64
		for _, p := range r.Partitions {
			k := partKey{p.Topic, p.Partition}
			// End is not kept in history: neither Evaluate nor Rate reads it.
			parts[k] = append(parts[k], lag.Sample{At: r.At, Committed: p.Committed, End: -1, Lag: p.Lag})
			if p.Committed > 0 && p.Lag >= 0 {
				committed += p.Committed
			}
		}
		w.total = append(w.total, lag.Sample{At: r.At, Committed: committed, End: -1, Lag: r.TotalLag})
		if r.At.After(st.lastAt) {
			st.lastAt = r.At
		}
	}
	for g, parts := range loaded {
		for k, samples := range parts {
			st.groups[g].parts[k] = pack(nil, samples)
		}
	}
}

// observe adds one sample of every group to the windows and judges each group. It returns the
// snapshot's groups and the history rows. Groups that vanished from the cluster leave the windows.
func (st *kafkaState) observe(groups []kafkamodel.Group, at time.Time) ([]lag.Group, []history.KafkaGroupSample) {
	cutoff := at.Add(-st.keep)
	rateFrom := at.Add(-st.window)
	windows := make(map[string]*groupWindow, len(groups))
	out := make([]lag.Group, 0, len(groups))
	rows := make([]history.KafkaGroupSample, 0, len(groups))
	var wins []lag.PartitionSamples // each group's rate windows, reused from group to group
	var rates []lag.Rates           // and their rates
	for _, g := range groups {
		// A re-sample runs behind the readers' answers (stale while revalidate): it yields between
		// groups so that on a console given one CPU the answers waiting for it are not held for a
		// whole round of 10,000 partitions (docs/benchmarks.md, issue 38).
		runtime.Gosched()
		w := st.groups[g.Name]
		if w == nil {
			w = &groupWindow{parts: map[partKey]series{}}
		}
		windows[g.Name] = w

		// The group's windows unpacked into one buffer reused from group to group: parts' sample
		// slices point into it until the group is judged.
		buf, parts := st.unpacked[:0], st.parts[:0]
		if g.Error == "" {
			// The group was described: its partitions now replace the window's set, updated in
			// place (a round allocates no new maps); partitions it no longer reads leave below.
			n := 0
			for _, t := range g.Topics {
				n += len(t.Partitions)
			}
			row := history.KafkaGroupSample{Cluster: st.name, Group: g.Name, At: at, TotalLag: g.TotalLag,
				State: g.State, Members: g.Members, MaxTimeLag: g.MaxTimeLag,
				Partitions: make([]history.KafkaPartitionSample, 0, n)}
			var committed int64
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					k := partKey{t.Topic, p.Partition}
					start := len(buf)
					buf = w.parts[k].unpack(buf)
					kept := trim(buf[start:], cutoff, rateFrom)
					pos := lag.Position(g, p) // a share group's start offset
					buf = append(buf[:start+len(kept)], lag.Sample{At: at, Committed: pos, End: p.End, Lag: p.Lag, TimeLag: p.TimeLag})
					samples := buf[start:len(buf):len(buf)]
					w.parts[k] = pack(w.parts[k], samples) // its old array: already unpacked
					parts = append(parts, lag.PartitionSamples{Topic: t.Topic, Partition: p.Partition, Samples: samples})
					row.Partitions = append(row.Partitions, history.KafkaPartitionSample{Topic: t.Topic, Partition: p.Partition,
						Committed: pos, Lag: p.Lag})
					if pos > 0 && p.Lag >= 0 {
						committed += pos
					}
				}
			}
			if len(w.parts) > n {
				current := make(map[partKey]bool, n)
				for _, t := range g.Topics {
					for _, p := range t.Partitions {
						current[partKey{t.Topic, p.Partition}] = true
					}
				}
				maps.DeleteFunc(w.parts, func(k partKey, _ series) bool { return !current[k] })
			}
			w.total = append(trim(w.total, cutoff, rateFrom), lag.Sample{At: at, Committed: committed, End: -1, Lag: g.TotalLag})
			rows = append(rows, row)
		} else {
			// Not described this time (e.g. its coordinator is loading): judge what is known.
			keys := make([]partKey, 0, len(w.parts))
			for k := range w.parts {
				keys = append(keys, k)
			}
			slices.SortFunc(keys, func(a, b partKey) int {
				if a.topic != b.topic {
					if a.topic < b.topic {
						return -1
					}
					return 1
				}
				return int(a.partition - b.partition)
			})
			for _, k := range keys {
				start := len(buf)
				buf = w.parts[k].unpack(buf)
				parts = append(parts, lag.PartitionSamples{Topic: k.topic, Partition: k.partition, Samples: buf[start:len(buf):len(buf)]})
			}
		}
		st.unpacked, st.parts = buf, parts

		gs := lag.EvaluateOf(g, st.src.Rules, st.every, parts, at)
		kg := lag.Judged(g, gs)
		if g.Error == "" {
			rows[len(rows)-1].Status = string(gs.Status.Code)
		}
		// The rate is the sum of the partitions' (each judged after its own offset resets); the
		// catch-up time is the slowest partition's, not the total's: a stalled partition must not
		// hide under another's fast drain. A group without members has them only when it consumes
		// steadily (movedOnce).
		total := windowFrom(w.total, rateFrom)
		if _, _, ok := lag.Rate(total); ok && (g.Members > 0 || g.Error != "" || !movedOnce(total)) {
			wins, rates = wins[:0], rates[:0]
			for _, p := range parts {
				win := windowFrom(p.Samples, rateFrom)
				wins = append(wins, lag.PartitionSamples{Topic: p.Topic, Partition: p.Partition, Samples: win})
				rates = append(rates, lag.RatesOf(win))
			}
			kg.CatchUp, _ = lag.GroupCatchUpOf(wins, rates, total)
			kg.RateKnown = true
			for i, p := range wins {
				r := rates[i]
				if r.Known {
					kg.Rate += r.Consumed
				}
				if !r.Known && !r.ProducedKnown {
					continue
				}
				if kg.TopicRates == nil {
					kg.TopicRates = map[string]lag.TopicRate{}
				}
				tr := kg.TopicRates[p.Topic]
				tr.Consumed += r.Consumed
				tr.Produced += r.Produced
				kg.TopicRates[p.Topic] = tr
			}
		}
		out = append(out, kg)
	}
	st.groups = windows
	return out, rows
}

// minSteadyMoves is in how many of the window's sample intervals the committed offsets of a group
// without members must have advanced for its rate to be told: a consumer in assign mode commits
// steadily, while an offset moved by hand (a reset by timestamp, a shift, an admin commit) moves
// once or twice, and the slope through that move would read as consumption ("0.12 msg/s, caught
// up in 12 m") that nothing does.
const minSteadyMoves = 3

// movedOnce reports whether the group's committed offsets (total, its window) advanced in some of
// its sample intervals but fewer than minSteadyMoves: a group without members then has no known
// rate. Offsets that did not move at all are a known rate of 0 (it consumes nothing).
func movedOnce(total []lag.Sample) bool {
	moves := 0
	for i := 1; i < len(total); i++ {
		if total[i].Committed > total[i-1].Committed {
			moves++
		}
	}
	return moves > 0 && moves < minSteadyMoves
}

// trim drops, in place, the samples a status and a rate no longer need: all older than cutoff
// (the keep horizon: StopAfter and two intervals), and of those older than the window's start,
// all but two — the last one at or before it (a rate spans the whole window: windowFrom) and the
// first of the newest run of equal committed offsets (how long the offset has not moved: STOP
// and STALL; lag.Evaluate counts "stuck since" from it). That first sample is kept past the
// horizon while the run lasts, so a reason says how long the offset has really not moved ("no
// commit for 3h") rather than the horizon's 15 m. The samples between them carry the same
// committed offset and nothing else a rule reads, so a partition holds about a window's samples
// instead of StopAfter's: at the defaults 22 instead of 62. The kept samples move to the front of
// the array, so its capacity is reused rather than regrown.
func trim(s []lag.Sample, cutoff, windowStart time.Time) []lag.Sample {
	i := 0
	for i < len(s) && s[i].At.Before(cutoff) {
		i++
	}
	for i+1 < len(s) && !s[i+1].At.After(windowStart) { // the last sample at or before the window's start
		i++
	}
	run := -1 // the oldest usable sample of the newest run of equal committed offsets
	for j := len(s) - 1; j >= 0; j-- {
		if s[j].Lag < 0 || s[j].At.IsZero() {
			continue // lag.Evaluate skips unusable samples; so does the run
		}
		if run >= 0 && s[j].Committed != s[run].Committed {
			break
		}
		run = j
	}
	if run < 0 || run >= i {
		return append(s[:0], s[i:]...)
	}
	s[0] = s[run]
	return append(s[:1], s[i:]...)
}

// windowFrom returns the samples from the last one at or before from onwards, so a window always
// spans its full width when the samples reach that far back.
func windowFrom(s []lag.Sample, from time.Time) []lag.Sample {
	i := 0
	for i+1 < len(s) && !s[i+1].At.After(from) {
		i++
	}
	return s[i:]
}

// LatestKafka returns the cluster's latest stored snapshot. Any replica can answer it: the snapshot
// is read from the store, and kept in memory for about a second, with concurrent callers sharing
// one read, so any number of viewers cost at most one small query per second per replica. A
// cluster never sampled yet has a zero At. The snapshot is shared: callers must not modify it.
// Errors: ops.ErrNotFound for a cluster that is not configured, ops.ErrUnavailable when the store
// cannot be read.
func (s *Sampler) LatestKafka(ctx context.Context, cluster string) (lag.Snapshot, error) {
	if _, ok := s.kafkaByName[cluster]; !ok {
		return lag.Snapshot{}, ops.NotFound("kafka cluster %q is not configured", cluster)
	}
	snap, err := latest(ctx, s, s.cache, "kafka cluster", cluster, s.readKafka)
	if err != nil {
		return lag.Snapshot{}, err
	}
	return s.withOpen(ctx, s.agedKafka(snap)), nil
}

// readKafka reads the stored snapshot (the cache-miss path), decoding the document once per new
// sample (readStored).
func (s *Sampler) readKafka(ctx context.Context, cluster string) (lag.Snapshot, error) {
	return readStored(ctx, s, s.cache, history.SnapshotKafka, lag.Snapshot{Cluster: cluster}, func(snap lag.Snapshot, row history.Snapshot) (lag.Snapshot, error) {
		groups, dlts, txns, ok, err := decodeKafkaSnapshot(row.Data)
		if err != nil {
			return lag.Snapshot{}, fmt.Errorf("kafka cluster %q: %w", cluster, err)
		}
		if ok {
			snap.At, snap.Groups, snap.DeadLetterTopics, snap.Transactions = row.At, groups, dlts, txns
		}
		return snap, nil
	})
}

// remember keeps a snapshot read or sampled for the viewers of the next CacheTTL.
func (s *Sampler) remember(snap lag.Snapshot) {
	if s.cacheTTL > 0 {
		keepNewer(&s.cacheMu, s.cache, snap.Cluster, snap)
	}
}

// rememberError marks the cached snapshot (if any) with a failed sample, as the store now does.
func (s *Sampler) rememberError(cluster, msg string, at time.Time) {
	markFailed(&s.cacheMu, s.cache, cluster, msg, at)
}

// KafkaGroupHistory returns a group's history from since to now in at most maxPoints points, each
// the maximum of its time bucket (so spikes survive), with the lag of the group's TopPartitions
// partitions that lagged most over the range. Every point has the same partition keys; a
// partition without a known lag in a bucket has -1 there. A group without samples in the range
// yields no points. The answer is shared by the viewers of the same chart for one Interval: a week
// of raw samples takes a good part of a second to downsample. Callers must not modify it.
// Errors: ops.ErrNotFound for an unconfigured cluster; ops.ErrInvalid for an empty group, a since
// not before now, or maxPoints outside [1, MaxHistoryPoints]; ops.ErrUnavailable when the store
// cannot be read.
func (s *Sampler) KafkaGroupHistory(ctx context.Context, cluster, group string, since time.Time, maxPoints int) ([]lag.Point, error) {
	if _, ok := s.kafkaByName[cluster]; !ok {
		return nil, ops.NotFound("kafka cluster %q is not configured", cluster)
	}
	if group == "" {
		return nil, ops.Invalid("group", "required")
	}
	now := s.now()
	key := historyKey{cluster: cluster, group: group, span: now.Sub(since).Round(time.Second), maxPoints: maxPoints}
	if s.cacheTTL > 0 {
		if points, ok := recent(&s.cacheMu, s.history, key, s.interval); ok {
			return points, nil
		}
	}
	flight := fmt.Sprintf("history\x00%s\x00%s\x00%d\x00%d", cluster, group, key.span, maxPoints)
	return ops.Shared(ctx, &s.reads, flight, 2*readTimeout, fmt.Sprintf("kafka group %q history", group), func(ctx context.Context) ([]lag.Point, error) {
		points, err := s.readHistory(ctx, cluster, group, since, now, maxPoints)
		if err == nil && s.cacheTTL > 0 {
			keepChart(&s.cacheMu, s.history, key, points, s.interval)
		}
		return points, err
	})
}

func (s *Sampler) readHistory(ctx context.Context, cluster, group string, since, until time.Time, maxPoints int) ([]lag.Point, error) {
	h, err := s.store.KafkaGroupHistory(ctx, cluster, group, since, until, maxPoints, TopPartitions)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(h.Partitions))
	for i, p := range h.Partitions {
		keys[i] = lag.PartitionKey(p.Topic, p.Partition)
	}
	out := make([]lag.Point, len(h.Points))
	for i, p := range h.Points {
		gp := lag.Point{At: p.At, TotalLag: p.TotalLag, MaxTimeLag: p.MaxTimeLag, Partitions: make(map[string]int64, len(keys))}
		for j, k := range keys {
			lag := int64(-1)
			if j < len(p.Partitions) {
				lag = p.Partitions[j]
			}
			gp.Partitions[k] = lag
		}
		out[i] = gp
	}
	return out, nil
}
