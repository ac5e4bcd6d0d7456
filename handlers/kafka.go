package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/singleflight"

	"github.com/a-h/templ"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/sampler"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/layout"
	kafkapages "github.com/redrive/redrive/views/pages/kafka"
)

// KafkaCluster is one cluster's live reads; *kafka.Cluster implements it. Errors: ErrNotFound
// (unknown topic), ErrInvalid (partition or offset out of range, naming the valid range),
// ErrUnavailable (the cluster cannot be reached).
type KafkaCluster interface {
	Name() string
	// GroupOffsetsNow reads one group's committed and end offsets now (a group page's live read).
	GroupOffsetsNow(ctx context.Context, group string, topics []string) (kafkamodel.GroupOffsets, error)
	Group(ctx context.Context, name string) (kafkamodel.Group, error)
	DeadLetterTopics(ctx context.Context) ([]kafkamodel.DLTopic, error)
	Records(ctx context.Context, q kafkamodel.RecordQuery) (kafkamodel.Page, error)
	// RecordsAcross reads a page across every partition, merged by timestamp (same errors).
	RecordsAcross(ctx context.Context, q kafkamodel.AcrossQuery) (kafkamodel.AcrossPage, error)
	// Partitions lists a topic's partitions with their offsets: ErrNotFound, ErrUnavailable.
	Partitions(ctx context.Context, topic string) ([]kafkamodel.PartitionRange, error)
	ErrorGroups(ctx context.Context, topic string, maxScan int) (kafkamodel.ErrorScan, error)
	// TopicID is the topic's ID now ("" when the broker has none): the topic page hands it to the
	// plans it starts, which refuse a topic created again since.
	TopicID(ctx context.Context, topic string) (string, error)
}

// KafkaSnapshots reads the sampler's stored lag snapshots and history (ops/sampler): pages never
// call the cluster's admin API themselves.
type KafkaSnapshots interface {
	LatestKafka(ctx context.Context, cluster string) (lag.Snapshot, error)
	// FreshKafka is LatestKafka re-sampled behind the answer once older than sampler.min_refresh
	// (stale while revalidate); a store that does not sample answers LatestKafka.
	FreshKafka(ctx context.Context, cluster string) (lag.Snapshot, error)
	KafkaGroupHistory(ctx context.Context, cluster, group string, since time.Time, maxPoints int) ([]lag.Point, error)
}

// Kafka serves the Kafka pages and API.
type Kafka struct {
	clusters  []KafkaCluster
	byName    map[string]KafkaCluster
	snapshots KafkaSnapshots
	meta      MetaFunc
	redact    *redact.Rules
	rules     map[string]lag.Rules // per cluster, for a group read through
	triage    Triage               // resolution state of dead letters; nil: every record open
	exports   *Search              // who may export (export.min_role); nil: nobody is offered it

	// encoded holds, per cluster, the groups of the last snapshot served by APIGroups as JSON:
	// a snapshot changes once per sample, and encoding 200 groups × 50 partitions costs
	// milliseconds of CPU per read, so readers between two samples share one encoding.
	encodedMu sync.Mutex
	encoded   map[string]encodedGroups
	encodes   singleflight.Group // one encoding of a snapshot at a time, by cluster and time
	// gzipReadAt is when a reader last took the groups gzipped (unix nanoseconds): while readers
	// do (gzipReaders), a new snapshot's groups are deflated behind the answers with their
	// encoding, so that no gzip reader waits for a compression; when none do, nothing is.
	gzipReadAt atomic.Int64
}

type encodedGroups struct {
	at   time.Time
	n    int
	json *sharedPart
	next time.Time // the newer snapshot being encoded behind the answers; zero when none
}

// encodeBehindFor is how much older than the snapshot read the groups APIGroups answers may be
// while that snapshot's encoding is made behind the answer (tens of milliseconds of CPU for 10,000
// partitions, more on a busy machine): past it, the read waits for the encoding.
const encodeBehindFor = 30 * time.Second

// NewKafka wires the configured clusters (in config order). redact masks record headers and
// values (nil masks nothing).
func NewKafka(clusters []KafkaCluster, snapshots KafkaSnapshots, meta MetaFunc, red *redact.Rules, rules map[string]lag.Rules) *Kafka {
	return &Kafka{clusters: clusters, byName: byName(clusters), snapshots: snapshots, meta: meta, redact: red, rules: rules}
}

func (h *Kafka) cluster(c echo.Context) (KafkaCluster, error) {
	return lookup(h.byName, pathParam(c, "cluster"), "kafka cluster")
}

func (h *Kafka) snapshot(c echo.Context) (KafkaCluster, lag.Snapshot, error) {
	k, err := h.cluster(c)
	if err != nil {
		return nil, lag.Snapshot{}, err
	}
	snap, err := h.fresh(c.Request().Context(), k.Name())
	return k, snap, err
}

func (h *Kafka) fresh(ctx context.Context, cluster string) (lag.Snapshot, error) {
	return h.snapshots.FreshKafka(ctx, cluster)
}

// APIGroups: GET /api/v1/kafka/:cluster/groups — from the latest snapshot.
func (h *Kafka) APIGroups(c echo.Context) error {
	_, snap, err := h.snapshot(c)
	if err != nil {
		return err
	}
	groups, at, err := h.groupsJSON(snap)
	if err != nil {
		return err
	}
	if !at.Equal(snap.At) { // the previous sample's groups, while this one's are encoded
		snap.Age += snap.At.Sub(at)
		snap.At, snap.Refreshing = at, true
	}
	resp := struct {
		SampledAt *time.Time `json:"sampled_at"`
		Error     string     `json:"error,omitempty"`
		freshnessJSON
		// Refreshing: a re-sample runs behind this answer (stale while revalidate); the next
		// read shows it.
		Refreshing bool `json:"refreshing"`
	}{SampledAt: knownUTC(snap.At), Error: snap.Error, freshnessJSON: toFreshnessJSON(snap.Freshness, snap.At), Refreshing: snap.Refreshing}
	head, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	gzip := acceptsGzip(c.Request())
	if gzip {
		h.gzipReadAt.Store(time.Now().UnixNano())
	}
	// {…head…,"groups":[…]}: the envelope (its ages change with every read) around the shared
	// groups, compressed once per snapshot.
	return spliceJSON(c, gzip, append(head[:len(head)-1], `,"groups":`...), groups, []byte("}\n"))
}

// gzipReaders is how long after a gzip read the groups are still deflated ahead of being asked.
const gzipReaders = 10 * time.Minute

// groupsJSON encodes the snapshot's groups, once per snapshot and cluster, and answers them with
// the time of the snapshot they are from. Stale while revalidate, as the sampler serves the
// snapshots: a snapshot newer than the last encoded one, by at most encodeBehindFor, is encoded
// behind the answer, which meanwhile gets the previous groups and their time (readers no longer
// queue behind the first reader of each new sample while it encodes and deflates 1.4 MB).
func (h *Kafka) groupsJSON(snap lag.Snapshot) (*sharedPart, time.Time, error) {
	h.encodedMu.Lock()
	e, ok := h.encoded[snap.Cluster]
	switch {
	case ok && e.at.Equal(snap.At) && e.n == len(snap.Groups) && !snap.At.IsZero():
		h.encodedMu.Unlock()
		return e.json, e.at, nil
	case ok && !e.at.IsZero() && snap.At.After(e.at) && snap.At.Sub(e.at) <= encodeBehindFor:
		if !e.next.Equal(snap.At) {
			e.next = snap.At
			h.encoded[snap.Cluster] = e
			go func() { _, _ = h.encodeGroups(snap) }() // a failure is the next synchronous read's
		}
		h.encodedMu.Unlock()
		return e.json, e.at, nil
	}
	h.encodedMu.Unlock()
	part, err := h.encodeGroups(snap)
	return part, snap.At, err
}

// encodeGroups encodes a snapshot's groups (once for concurrent callers) and keeps them unless a
// newer snapshot's are kept already.
func (h *Kafka) encodeGroups(snap lag.Snapshot) (*sharedPart, error) {
	v, err, _ := h.encodes.Do(snap.Cluster+"\x00"+snap.At.Format(time.RFC3339Nano), func() (any, error) {
		// One group at a time, yielding between them: this runs behind the answers (stale while
		// revalidate), and one Marshal of 10,000 partitions held a CPU the readers' answers were
		// waiting for for ~20 ms at a stretch. Each group is appended straight into the answer
		// (appendGroupJSON: encoding/json's bytes without its reflection), which starts at the
		// size of the cluster's last answer, so it is not regrown and copied either.
		b := make([]byte, 0, h.encodedSize(snap.Cluster))
		b = append(b, '[')
		for i, g := range snap.Groups {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendGroupJSON(b, g); !ok {
				j, err := json.Marshal(toGroupJSON(g)) // what it refuses, or its error
				if err != nil {
					return nil, fmt.Errorf("encode groups: %w", err)
				}
				b = append(b, j...)
			}
			runtime.Gosched()
		}
		b = append(b, ']')
		part := newSharedPart(b)
		if time.Since(time.Unix(0, h.gzipReadAt.Load())) < gzipReaders {
			part.Deflated()
		}
		h.encodedMu.Lock()
		defer h.encodedMu.Unlock()
		if h.encoded == nil {
			h.encoded = map[string]encodedGroups{}
		}
		if cur, ok := h.encoded[snap.Cluster]; !ok || !cur.at.After(snap.At) {
			h.encoded[snap.Cluster] = encodedGroups{at: snap.At, n: len(snap.Groups), json: part}
		}
		return part, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*sharedPart), nil
}

// encodedSize is what a cluster's groups are likely to take encoded: its last answer's size and an
// eighth more, 1 MiB before the first.
func (h *Kafka) encodedSize(cluster string) int {
	h.encodedMu.Lock()
	defer h.encodedMu.Unlock()
	if e, ok := h.encoded[cluster]; ok && e.json != nil {
		return len(e.json.text) + len(e.json.text)/8
	}
	return 1 << 20
}

// APIGroup: GET /api/v1/kafka/:cluster/groups/:group — the snapshot's group with its offsets
// read now (lag.LiveOffsets).
func (h *Kafka) APIGroup(c echo.Context) error {
	k, snap, g, err := h.group(c)
	if err != nil {
		return err
	}
	g, offsetsAt := lag.LiveOffsets(c.Request().Context(), k, snap, g)
	return c.JSON(http.StatusOK, groupDetailJSON{groupJSON: toGroupJSON(g), MemberList: toMembersJSON(g),
		Pipelines: toPipelinesJSON(sampler.Pipelines(g, snap.DeadLetterTopics)),
		SampledAt: knownUTC(snap.At), OffsetsAt: knownUTC(offsetsAt), freshnessJSON: toFreshnessJSON(snap.Freshness, snap.At)})
}

// group finds the path's group in the latest snapshot, or reads it through (lag.FindGroup) — its
// status then comes from that single observation, so it cannot show a trend (WARN, STALL) until
// the sampler has a window.
func (h *Kafka) group(c echo.Context) (KafkaCluster, lag.Snapshot, lag.Group, error) {
	k, snap, err := h.snapshot(c)
	if err != nil {
		return nil, snap, lag.Group{}, err
	}
	g, err := lag.FindGroup(c.Request().Context(), k, snap, pathParam(c, "group"), h.rules[k.Name()])
	return k, snap, g, err
}

// historyRange parses since as every time in the API reads (parseTime): an age (1h, 6h, 24h, 7d),
// a date or RFC 3339, in the past and at most 31 days back (the history's retention).
func historyRange(c echo.Context) (time.Time, string, error) {
	raw := c.QueryParam("since")
	if raw == "" {
		raw = "1h"
	}
	now := time.Now()
	at, ok := parseTime(raw, now)
	if !ok || !at.Before(now) || now.Sub(at) > 31*24*time.Hour {
		return time.Time{}, "", ops.Invalid("since", "must be an age such as 1h, 6h, 24h or 7d, a date (2026-11-30) or RFC 3339, within the last 31 days")
	}
	return at, raw, nil
}

// maxChartPoints bounds a history answer whatever the range.
const maxChartPoints = 400

// APIGroupHistory: GET /api/v1/kafka/:cluster/groups/:group/history?since=1h. A group the cluster
// does not have is a 404, as its page is (an empty history would read as "no lag").
func (h *Kafka) APIGroupHistory(c echo.Context) error {
	k, _, g, err := h.group(c)
	if err != nil {
		return err
	}
	since, _, err := historyRange(c)
	if err != nil {
		return err
	}
	points, err := h.snapshots.KafkaGroupHistory(c.Request().Context(), k.Name(), g.Name, since, maxChartPoints)
	if err != nil {
		return err
	}
	out := groupHistoryJSON{Points: make([]groupPointJSON, 0, len(points))}
	for _, p := range points {
		out.Points = append(out.Points, groupPointJSON{At: p.At.UTC(), TotalLag: p.TotalLag, MaxLagSeconds: seconds(p.MaxTimeLag),
			Partitions: p.Partitions})
	}
	return c.JSON(http.StatusOK, out)
}

// APIDeadLetterTopics: GET /api/v1/kafka/:cluster/dead-letter-topics.
func (h *Kafka) APIDeadLetterTopics(c echo.Context) error {
	k, err := h.cluster(c)
	if err != nil {
		return err
	}
	topics, err := k.DeadLetterTopics(c.Request().Context())
	if err != nil {
		return err
	}
	topics = h.openCounts(c.Request().Context(), k.Name(), topics)
	out := make([]dltJSON, 0, len(topics))
	for _, t := range topics {
		j := dltJSON{Topic: t.Topic, Retry: t.Retry, Partitions: len(t.Partitions), Records: t.Records, Counted: t.Counted, Open: t.Open(),
			PerPart: []dltPartitionJSON{}, NewestAt: knownUTC(t.NewestAt)}
		for _, p := range t.Partitions {
			j.PerPart = append(j.PerPart, toDLTPartitionJSON(p))
		}
		out = append(out, j)
	}
	return c.JSON(http.StatusOK, deadLetterTopicsJSON{Topics: out})
}

// parseAcrossQuery reads the query of a page across every partition (partition=all): at, limit,
// order and the cursor of a following page. offset names a partition's position, so it is refused.
func parseAcrossQuery(c echo.Context) (kafkamodel.AcrossQuery, error) {
	one, err := parseRecordQuery(c)
	if err != nil {
		return kafkamodel.AcrossQuery{}, err
	}
	q := kafkamodel.AcrossQuery{Topic: one.Topic, At: one.At, Limit: one.Limit, Order: one.Order, Isolation: one.Isolation}
	if one.Offset != nil {
		return q, ops.Invalid("offset", "needs one partition; with partition=all use at or cursor")
	}
	if raw := c.QueryParam("cursor"); raw != "" {
		if q.At != nil {
			return q, ops.Invalid("at", "give at or cursor, not both")
		}
		cur, err := pageCursor(raw)
		if err != nil {
			return q, err
		}
		q.Cursor = cur
	}
	return q, nil
}

// pageCursor reads the cursor of a page across partitions (cursorText's).
func pageCursor(raw string) (map[int32]int64, error) {
	cur, ok := parseCursorText(raw, 0)
	if !ok {
		return nil, ops.Invalid("cursor", "must be partition:offset pairs separated by commas, as in the previous page's next_cursor")
	}
	return cur, nil
}

// cursorText encodes a page's Next cursor for a link or the API ("" when there is no next page).
func cursorText(next map[int32]int64) string {
	if len(next) == 0 {
		return ""
	}
	ps := make([]int32, 0, len(next))
	for p := range next {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = strconv.Itoa(int(p)) + ":" + strconv.FormatInt(next[p], 10)
	}
	return strings.Join(parts, ",")
}

// parseCursorText reads back what cursorText wrote: partition:offset pairs, each offset at
// least floor; false when raw is not that.
func parseCursorText(raw string, floor int64) (map[int32]int64, bool) {
	out := map[int32]int64{}
	for _, f := range strings.Split(raw, ",") {
		p, off, ok := strings.Cut(f, ":")
		pn, perr := strconv.ParseInt(p, 10, 32)
		on, oerr := strconv.ParseInt(off, 10, 64)
		if !ok || perr != nil || oerr != nil || pn < 0 || on < floor {
			return nil, false
		}
		out[int32(pn)] = on
	}
	return out, true
}

func allPartitions(c echo.Context) bool { return c.QueryParam("partition") == "all" }

// optionalTime reads an optional time parameter (as queryTime) by its presence: nil when it is
// absent or blank, so that 0001-01-01, the zero time.Time, is a time like any other.
func optionalTime(c echo.Context, name string, now time.Time) (*time.Time, error) {
	if strings.TrimSpace(c.QueryParam(name)) == "" {
		return nil, nil
	}
	t, ok := parseTime(strings.TrimSpace(c.QueryParam(name)), now)
	if !ok {
		return nil, ops.Invalid(name, "must be RFC 3339 (2026-11-30T06:00:00Z), a date (2026-11-30) or an age like 15m, 6h, 7d")
	}
	return &t, nil
}

// parseRecordQuery reads partition, offset, at, limit and order.
func parseRecordQuery(c echo.Context) (kafkamodel.RecordQuery, error) {
	q := kafkamodel.RecordQuery{Topic: pathParam(c, "topic"), Order: "newest"}
	if !allPartitions(c) {
		p, err := queryInt(c, "partition", 0, 0, 1<<31-1)
		if err != nil {
			return q, err
		}
		q.Partition = int32(p)
		// A cursor continues a page across partitions (or a filter's scan, answered before
		// this): one partition's pages go on by offset. Ignored, a bad one read as the first page.
		if raw := c.QueryParam("cursor"); raw != "" {
			if _, err := pageCursor(raw); err != nil {
				return q, err
			}
			return q, ops.Invalid("cursor", "continues a page of partition=all or a filter's scan; with one partition, give the previous page's next_offset as offset")
		}
	}
	if raw := c.QueryParam("offset"); raw != "" {
		off, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || off < 0 {
			return q, ops.Invalid("offset", "must be a non-negative integer")
		}
		q.Offset = &off
	}
	if at, err := optionalTime(c, "at", time.Now()); err != nil {
		return q, ops.Invalid("at", "must be RFC 3339 (2026-11-30T06:00:00Z), a date, or an age like 15m")
	} else if at != nil {
		if q.Offset != nil {
			return q, ops.Invalid("at", "give offset or at, not both")
		}
		q.At = at
	}
	limit, err := queryInt(c, "limit", kafkamodel.DefaultLimit, 1, kafkamodel.MaxLimit)
	if err != nil {
		return q, err
	}
	q.Limit = int(limit)
	if q.Isolation, err = isolationParam(c); err != nil {
		return q, err
	}
	switch o := c.QueryParam("order"); o {
	case "", "newest":
	case "oldest":
		q.Order = o
	default:
		return q, ops.Invalid("order", "must be newest or oldest")
	}
	return q, nil
}

// isolationParam reads isolation: "committed" (the default: what a read_committed consumer gets)
// or "uncommitted", an admin's forensic read of every record written, aborted ones marked. A
// viewer or operator asking for it is refused (403), as a reveal is.
func isolationParam(c echo.Context) (kafkamodel.Isolation, error) {
	switch c.QueryParam("isolation") {
	case "", "committed":
		return kafkamodel.ReadCommitted, nil
	case "uncommitted":
		if err := ops.Require(ActorOf(c), access.Admin, "reading uncommitted records (isolation=uncommitted)"); err != nil {
			return kafkamodel.ReadCommitted, err
		}
		return kafkamodel.ReadUncommitted, nil
	}
	return kafkamodel.ReadCommitted, ops.Invalid("isolation", "must be committed or uncommitted")
}

// recordQuery is the cluster of the path and the page of its topic that the query asks for.
func (h *Kafka) recordQuery(c echo.Context) (KafkaCluster, kafkamodel.RecordQuery, error) {
	k, err := h.cluster(c)
	if err != nil {
		return nil, kafkamodel.RecordQuery{}, err
	}
	q, err := parseRecordQuery(c)
	return k, q, err
}

// APIRecords: GET /api/v1/kafka/:cluster/topics/:topic/records.
func (h *Kafka) APIRecords(c echo.Context) error {
	k, q, err := h.recordQuery(c)
	if err != nil {
		return err
	}
	raw, err := rawParam(c)
	if err != nil {
		return err
	}
	// A plain page is not streamed (only a filter's scan is), but a stream that is neither true
	// nor false is a typo to say, not to ignore.
	if _, err := queryBool(c, "stream"); err != nil {
		return err
	}
	if err := refuseScanOnly(c); err != nil {
		return err
	}
	state, err := recordState(c, "all")
	if err != nil {
		return err
	}
	red, err := redactionFor(c, h.redact, "kafka/"+k.Name()+"/"+q.Topic)
	if err != nil {
		return err
	}
	if allPartitions(c) {
		return h.apiRecordsAcross(c, k, red, raw, state)
	}
	page, err := k.Records(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out, err := h.recordsJSON(c, k, q.Topic, page.Records, red, raw, state)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, recordsJSON{Records: out, Start: page.Start, End: page.End, LastStableOffset: page.Stable,
		Isolation: page.Isolation.String(), NextOffset: page.Next, PrevOffset: page.Prev})
}

// recordsJSON is a page's records as the records API answers them: those in the resolution state
// asked for, each masked as the caller may see it and with its resolution.
func (h *Kafka) recordsJSON(c echo.Context, k KafkaCluster, topic string, page []kafkamodel.Record, red *redact.Rules, raw bool, state string) ([]recordJSON, error) {
	recs, res, err := h.withResolutions(c.Request().Context(), k.Name(), topic, page, state)
	if err != nil {
		return nil, err
	}
	out := make([]recordJSON, 0, len(recs))
	for _, r := range recs {
		r, redacted := red.Record(r)
		j := toRecordJSON(r, raw)
		j.Redacted, j.Resolution = redacted, toResolutionJSON(resolutionOf(res, r))
		out = append(out, j)
	}
	return out, nil
}

// apiRecordsAcross answers partition=all: newest first across partitions, merged by timestamp,
// with each partition's offsets and the cursor of the next page.
func (h *Kafka) apiRecordsAcross(c echo.Context, k KafkaCluster, red *redact.Rules, raw bool, state string) error {
	q, err := parseAcrossQuery(c)
	if err != nil {
		return err
	}
	page, err := k.RecordsAcross(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out, err := h.recordsJSON(c, k, q.Topic, page.Records, red, raw, state)
	if err != nil {
		return err
	}
	parts := make([]dltPartitionJSON, 0, len(page.Partitions))
	for _, p := range page.Partitions {
		parts = append(parts, toPartitionJSON(p))
	}
	var next *string
	if cur := cursorText(page.Next); cur != "" {
		next = &cur
	}
	return c.JSON(http.StatusOK, recordsAcrossJSON{Records: out, Partition: "all", Order: page.Order, Isolation: q.Isolation.String(),
		Partitions: parts, NextCursor: next})
}

// maxErrorScan bounds the records one error-group request reads.
const maxErrorScan = 100_000

// APIErrorGroups: GET /api/v1/kafka/:cluster/topics/:topic/error-groups?max_scan=.
func (h *Kafka) APIErrorGroups(c echo.Context) error {
	k, err := h.cluster(c)
	if err != nil {
		return err
	}
	maxScan, err := queryInt(c, "max_scan", 10_000, 1, maxErrorScan)
	if err != nil {
		return err
	}
	red, err := redactionFor(c, h.redact, "kafka/"+k.Name()+"/"+pathParam(c, "topic"))
	if err != nil {
		return err
	}
	scan, err := h.errorGroups(c.Request().Context(), k, pathParam(c, "topic"), int(maxScan))
	if err != nil {
		return err
	}
	out := kafkaErrorGroupsJSON{Groups: make([]kafkaErrorGroupJSON, 0, len(scan.Groups)), Scanned: scan.Scanned, Total: scan.Total,
		TotalExact: scan.TotalExact, Capped: scan.Capped}
	groupNotes := map[triage.GroupKey][]noteJSON{}
	for _, n := range h.topicNotes(c.Request().Context(), k.Name(), pathParam(c, "topic")) {
		if n.Group != nil {
			groupNotes[*n.Group] = append(groupNotes[*n.Group], toNoteJSON(n))
		}
	}
	for _, g := range scan.Groups {
		notes := groupNotesOf(groupNotes, g)
		if notes == nil {
			notes = []noteJSON{}
		}
		g = red.ErrorGroup(g)
		out.Groups = append(out.Groups, kafkaErrorGroupJSON{g.ExceptionType, g.ExceptionCause, g.Count, g.Open(), g.FirstAt.UTC(), g.LastAt.UTC(),
			g.OriginalTopics, g.SampleMessage, g.SamplePartition, g.SampleOffset, notes})
	}
	return c.JSON(http.StatusOK, out)
}

// kafkaCrumbs are the breadcrumbs of a page inside a cluster: Kafka, the cluster, then crumbs.
func kafkaCrumbs(cluster string, crumbs ...layout.Crumb) []layout.Crumb {
	return append([]layout.Crumb{{Label: "Kafka", Href: paths.Kafka}, {Label: cluster, Href: paths.KafkaCluster(cluster)}}, crumbs...)
}

// Index: GET /kafka — every cluster with its groups and dead-letter topics.
func (h *Kafka) Index(c echo.Context) error {
	return areaIndex(c, h.clusters, paths.KafkaCluster, func(names []string) templ.Component {
		return kafkapages.Index(kafkapages.IndexPage{Meta: h.meta(c, "Kafka", "kafka"), Clusters: names})
	})
}

// Cluster: GET /kafka/:cluster — groups and dead-letter topics from the snapshot.
func (h *Kafka) Cluster(c echo.Context) error {
	k, err := h.cluster(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	page := kafkapages.ClusterPage{Meta: h.clusterMeta(c, "Kafka "+k.Name(), k.Name()), Cluster: k.Name(),
		LiveURL: c.Request().URL.RequestURI(), Refresh: refreshSeconds(h.snapshots)}
	page.Meta.Breadcrumbs = page.Meta.Breadcrumbs[:1]
	page.Meta.Breadcrumbs = append(page.Meta.Breadcrumbs, layout.Crumb{Label: k.Name()})
	snap, err := h.fresh(ctx, k.Name())
	if err != nil {
		page.GroupsError = shown(c, err)
	} else {
		page.SampledAt, page.SampleError, page.Refreshing = snap.At, sampleNote(snap.Error, snap.Freshness), snap.Refreshing
		page.Groups = toGroupRows(snap)
		page.Transactions = toTransactionRows(snap, time.Now())
	}
	page.TransactionsAfter = kafkamodel.DefaultHangingTransactionAfter.String()
	if a, ok := k.(interface{ HangingTransactionAfter() time.Duration }); ok {
		page.TransactionsAfter = ops.FormatAge(a.HangingTransactionAfter())
	}
	// The sampler lists the dead-letter topics with each sample; ask the cluster only when the
	// snapshot has none (never sampled, or a snapshot from before DLTs were sampled).
	topics := snap.DeadLetterTopics
	if topics == nil {
		if topics, err = k.DeadLetterTopics(ctx); err != nil {
			page.TopicsError = shown(c, err)
		}
		topics = h.openCounts(ctx, k.Name(), topics)
	}
	page.DLTs = toDLTRows(topics)
	return render(c, http.StatusOK, kafkapages.Cluster(page))
}

// GroupPage: GET /kafka/:cluster/groups/:group.
func (h *Kafka) GroupPage(c echo.Context) error {
	k, snap, g, err := h.group(c)
	if err != nil {
		return err
	}
	_, rangeLabel, err := historyRange(c)
	if err != nil {
		return err
	}
	sampledLag := g.TotalLag
	g, offsetsAt := lag.LiveOffsets(c.Request().Context(), k, snap, g)
	reason := g.Status.Reason
	if !offsetsAt.IsZero() && g.TotalLag != sampledLag && reason != "" && !snap.At.IsZero() {
		// The verdict is the sample's and says its lag; the lag shown is read now.
		reason += fmt.Sprintf(" (at the sample, %s ago; total lag now %s)", ops.FormatAge(time.Since(snap.At).Truncate(time.Second)), ops.FormatNum(g.TotalLag))
	}
	page := kafkapages.GroupPage{Meta: h.clusterMeta(c, "Group "+g.Name, k.Name(), layout.Crumb{Label: g.Name}),
		Cluster: k.Name(), Name: g.Name, Type: g.Kind(), State: g.State, Protocol: g.Protocol, Members: g.Members,
		TotalLag: g.TotalLag, TimeLag: timeLagText(g.MaxTimeLag), Status: string(g.Status.Code), Reason: reason, StatusSince: g.Status.Since, SampledAt: snap.At,
		Range: rangeLabel, LiveURL: c.Request().URL.RequestURI(), Refresh: refreshSeconds(h.snapshots), Error: g.Error, SampleError: sampleNote(snap.Error, snap.Freshness)}
	if g.RateKnown {
		page.Rate = fmt.Sprintf("%.1f msg/s", g.Rate)
		switch {
		case g.CatchUp == 0:
			page.CatchUp = "caught up"
		case g.CatchUp < 0:
			page.CatchUp, page.CatchUpNote = "not catching up", "a partition's lag is not shrinking"
		default:
			page.CatchUp, page.CatchUpNote = "about "+g.CatchUp.Round(time.Second).String(), "the slowest partition's, at its recent slope"
		}
	}
	page.OffsetsAt, page.Refreshing = offsetsAt, snap.Refreshing
	groupTypeView(&page, g)
	sort.SliceStable(page.Partitions, func(i, j int) bool { return page.Partitions[i].Lag > page.Partitions[j].Lag })
	if !page.IsShare() { // a share group commits no offsets: nothing to skip by moving one
		page.Skip = skipOffer(g.Status.Code, page.Partitions)
	}
	page.Pipelines = toPipelineViews(k.Name(), sampler.Pipelines(g, snap.DeadLetterTopics))
	page.HeldBy = heldBy(snap, g.Name, time.Now())
	return render(c, http.StatusOK, kafkapages.Group(page))
}

// TopicPage: GET /kafka/:cluster/topics/:topic — browse records; ?exception= keeps the records of
// one error group among those read.
func (h *Kafka) TopicPage(c echo.Context) error {
	k, q, err := h.recordQuery(c)
	if err != nil {
		return err
	}
	exception := c.QueryParam("exception")
	cause, byCause := c.QueryParams()["cause"]
	if exception != "" && c.QueryParam("limit") == "" {
		q.Limit = kafkamodel.MaxLimit // read a full page, keep the matches
	}
	// Open records by default: what is resolved, ignored or replayed is done with. A topic that is
	// no dead-letter topic (orders, linked from every pipeline) holds records, not dead letters:
	// no state, no error groups, no plan of its partition.
	dlt := isDeadLetterTopic(k, q.Topic)
	defState := triage.StateOpen
	if !dlt {
		defState = "all"
	}
	state, err := recordState(c, defState)
	if err != nil {
		return err
	}
	page := kafkapages.TopicPage{DeadLetters: dlt, Meta: h.clusterMeta(c, "Topic "+q.Topic, k.Name(), layout.Crumb{Label: q.Topic}),
		Cluster: k.Name(), Topic: q.Topic, Partition: q.Partition, Order: q.Order, Limit: q.Limit,
		Exception: exception, ByCause: byCause, Cause: strings.Join(cause, ""), OffsetInput: c.QueryParam("offset"), AtInput: c.QueryParam("at"), State: state, Flash: readFlash(c)}
	red, err := redactionFor(c, h.redact, "kafka/"+k.Name()+"/"+q.Topic)
	if err != nil {
		return err
	}
	page.CanReveal = red != nil && ActorOf(c).Can(access.Admin)
	page.Masked = red != nil
	page.Revealed, _ = queryBool(c, "reveal") // redactionFor refused a reveal it did not grant
	page.CanUncommitted = ActorOf(c).Can(access.Admin)
	page.Uncommitted = q.Isolation == kafkamodel.ReadUncommitted
	// Read before the records: a topic created again in between makes the plan refuse, never
	// replay records nobody saw.
	page.TopicID, _ = k.TopicID(c.Request().Context(), q.Topic)
	h.searchLinks(c, &page)
	// A search given no partition reads every partition (searchLinks): so does the page, whose
	// partition choice and "Plan replay of the matches" said partition 0 while the scan and the
	// export read them all (orders.DLT?filter=true: 240 matched, the plan of the matches 80).
	// The page opens on every partition too (it opened on partition 0: "80 records" of 240); an
	// offset names a position in one partition, so offset= alone is partition 0's.
	if allPartitions(c) || (c.QueryParam("partition") == "" && c.QueryParam("offset") == "") {
		return h.topicAcross(c, k, red, page)
	}
	parts, err := k.Partitions(c.Request().Context(), q.Topic)
	if err != nil {
		return err
	}
	page.Partitions = partitionOptions(parts)
	res, err := k.Records(c.Request().Context(), q)
	if err != nil {
		return err
	}
	page.Start, page.End, page.Stable = res.Start, res.End, res.Stable
	if err := h.showRecords(c.Request().Context(), k, red, &page, res.Records); err != nil {
		return err
	}
	base := url.Values{"partition": {strconv.Itoa(int(q.Partition))}, "order": {q.Order}, "limit": {strconv.Itoa(q.Limit)}, "state": {state}}
	if page.Uncommitted {
		base.Set("isolation", "uncommitted") // the pages around it are read the same way
	}
	page.SetGroupFilter(base)
	link := func(off *int64) string {
		if off == nil {
			return ""
		}
		v := url.Values{}
		for key, vals := range base {
			v[key] = vals
		}
		v.Set("offset", strconv.FormatInt(*off, 10))
		return paths.WithQuery(paths.KafkaTopic(k.Name(), q.Topic), v)
	}
	page.NextURL, page.PrevURL = link(res.Next), link(res.Prev)
	return render(c, http.StatusOK, kafkapages.Topic(page))
}

// showRecords puts the records read on the topic page (one partition or all): how many were
// read, and as rows those in the page's state (with their resolutions) and error group, as the
// reader may see them, with their notes.
func (h *Kafka) showRecords(ctx context.Context, k KafkaCluster, red *redact.Rules, page *kafkapages.TopicPage, read []kafkamodel.Record) error {
	page.Read = len(read)
	recs, resolutions, err := h.withResolutions(ctx, k.Name(), page.Topic, read, page.State)
	if err != nil {
		return err
	}
	_, recordNotes := notesByTarget(h.topicNotes(ctx, k.Name(), page.Topic))
	for _, r := range recs {
		// Filtered on what the reader may see: a masked exception type is not guessable by filter.
		r, _ = red.Record(r)
		if !inGroup(*page, r) {
			continue
		}
		v := toRecordView(r)
		v.Resolution = toResolutionView(resolutionOf(resolutions, r))
		v.Notes = recordNotes[triage.RecordKey{Partition: r.Partition, Offset: r.Offset}]
		page.Records = append(page.Records, v)
	}
	return nil
}

// isDeadLetterTopic says whether topic is one of k's dead-letter topics (kafka[].dlt_patterns);
// a cluster that cannot tell treats every topic as one, as before.
func isDeadLetterTopic(k KafkaCluster, topic string) bool {
	if d, ok := k.(interface{ IsDeadLetterTopic(string) bool }); ok {
		return d.IsDeadLetterTopic(topic)
	}
	return true
}

// groupNotesOf are the notes of an error group: those written on its key, else — for a group
// keyed by a fingerprint (ops.ErrorFingerprint) — those written on its exception class before
// groups had fingerprints, so that no stored note is orphaned by the finer key.
func groupNotesOf[N any](notes map[triage.GroupKey][]N, g kafkamodel.ErrorGroup) []N {
	if n := notes[triage.GroupKey{Type: g.ExceptionType, Cause: g.ExceptionCause}]; len(n) > 0 {
		return n
	}
	if class := ops.ErrorGroupClass(g.ExceptionType); class != g.ExceptionType {
		return notes[triage.GroupKey{Type: class, Cause: g.ExceptionCause}]
	}
	return nil
}

// inGroup says whether a record (as the reader may see it) is in the page's error group, compared
// on the text the groups are keyed by (kafkapages.GroupText), so that a group's Records link lists
// exactly its records; every record when the page has no exception filter.
func inGroup(page kafkapages.TopicPage, r kafkamodel.Record) bool {
	if page.Exception == "" {
		return true
	}
	want := kafkapages.GroupText(page.Exception)
	if _, _, ok := redact.GroupRef(want); ok {
		want = redact.Redacted // a masked group's link: its records show the type masked
	}
	d := r.DeadLetter
	return d != nil && (kafkapages.GroupText(d.GroupType()) == want ||
		kafkapages.GroupText(d.ExceptionType) == want) && // a link naming the class alone
		(!page.ByCause || kafkapages.GroupText(d.ExceptionCause) == kafkapages.GroupText(page.Cause))
}

// topicAcross renders partition=all: the topic's newest (or oldest) records across partitions.
func (h *Kafka) topicAcross(c echo.Context, k KafkaCluster, red *redact.Rules, page kafkapages.TopicPage) error {
	q, err := parseAcrossQuery(c)
	if err != nil {
		return err
	}
	if page.Exception != "" && c.QueryParam("limit") == "" {
		q.Limit = kafkamodel.MaxLimit
	}
	page.All, page.Limit = true, q.Limit
	res, err := k.RecordsAcross(c.Request().Context(), q)
	if err != nil {
		return err
	}
	page.Partitions = partitionOptions(res.Partitions)
	if err := h.showRecords(c.Request().Context(), k, red, &page, res.Records); err != nil {
		return err
	}
	if cur := cursorText(res.Next); cur != "" {
		v := url.Values{"partition": {"all"}, "order": {q.Order}, "limit": {strconv.Itoa(q.Limit)}, "cursor": {cur}, "state": {page.State}}
		if page.Uncommitted {
			v.Set("isolation", "uncommitted")
		}
		page.SetGroupFilter(v)
		page.NextURL = paths.WithQuery(paths.KafkaTopic(k.Name(), q.Topic), v)
	}
	return render(c, http.StatusOK, kafkapages.Topic(page))
}

// RecordDetail: GET /kafka/:cluster/topics/:topic/records/:partition/:offset — one record's full
// view as a topic page's row loads it when first expanded (htmx): masked for the reader, with its
// state, notes and forms, as the page itself would have shown it; read as the list was
// (isolation, reveal), its forms returning to the list (back). Opened on its own (a link, a new
// tab), it is the topic page of that one record.
func (h *Kafka) RecordDetail(c echo.Context) error {
	k, err := h.cluster(c)
	if err != nil {
		return err
	}
	topic := pathParam(c, "topic")
	partition, perr := strconv.ParseInt(pathParam(c, "partition"), 10, 32)
	offset, oerr := strconv.ParseInt(pathParam(c, "offset"), 10, 64)
	if perr != nil || oerr != nil || partition < 0 || offset < 0 {
		return ops.NotFound("no record %s:%s: a record is addressed by its partition and offset, both non-negative integers",
			ops.Echo(pathParam(c, "partition")), ops.Echo(pathParam(c, "offset")))
	}
	if c.Request().Header.Get("HX-Request") != "true" {
		return c.Redirect(http.StatusSeeOther, kafkapages.RecordPage(k.Name(), topic, int32(partition), offset))
	}
	isolation, err := isolationParam(c)
	if err != nil {
		return err
	}
	red, err := redactionFor(c, h.redact, "kafka/"+k.Name()+"/"+topic)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	res, err := k.Records(ctx, kafkamodel.RecordQuery{Topic: topic, Partition: int32(partition), Offset: &offset, Limit: 1,
		Order: "newest", Isolation: isolation})
	if errors.Is(err, ops.ErrInvalid) {
		return ops.NotFound("record %d:%d of %s cannot be read any more (%s): retention, compaction or the topic's "+
			"recreation removed it since the list was read; reload the list", partition, offset, ops.Echo(topic), err)
	}
	if err != nil {
		return err
	}
	if len(res.Records) == 0 || res.Records[0].Offset != offset {
		return ops.NotFound("record %d:%d of %s is not there any more (an aborted transaction's, or removed since the list "+
			"was read); reload the list", partition, offset, ops.Echo(topic))
	}
	page := kafkapages.TopicPage{DeadLetters: isDeadLetterTopic(k, topic), Meta: h.clusterMeta(c, "Topic "+topic, k.Name()),
		Cluster: k.Name(), Topic: topic, Partition: int32(partition), Order: "newest", Limit: 1, State: "all",
		Masked: red != nil, Uncommitted: isolation == kafkamodel.ReadUncommitted}
	if back, ok := below(c.QueryParam("back"), paths.KafkaTopic(k.Name(), topic)); ok {
		page.Back = paths.WithQuery(back.EscapedPath(), back.Query())
	}
	if err := h.showRecords(ctx, k, red, &page, res.Records); err != nil {
		return err
	}
	return render(c, http.StatusOK, kafkapages.RecordDetail(page, page.Records[0]))
}

// maxSampleMessage is what an error group's row shows of its sample's exception message (a
// paragraph, "…" where it is cut; the row's Sample shows the record): a header can be a megabyte.
const maxSampleMessage = 1 << 10

// ErrorsPage: GET /kafka/:cluster/topics/:topic/errors — one row per bug.
func (h *Kafka) ErrorsPage(c echo.Context) error {
	k, err := h.cluster(c)
	if err != nil {
		return err
	}
	topic := pathParam(c, "topic")
	maxScan, err := queryInt(c, "max_scan", 10_000, 1, maxErrorScan)
	if err != nil {
		return err
	}
	red, err := redactionFor(c, h.redact, "kafka/"+k.Name()+"/"+topic)
	if err != nil {
		return err
	}
	scan, err := h.errorGroups(c.Request().Context(), k, topic, int(maxScan))
	if err != nil {
		return err
	}
	page := kafkapages.ErrorsPage{Flash: readFlash(c), Meta: h.clusterMeta(c, "Errors in "+topic, k.Name(),
		layout.Crumb{Label: topic, Href: paths.KafkaTopic(k.Name(), topic)}, layout.Crumb{Label: "errors"}),
		Cluster: k.Name(), Topic: topic, Scanned: scan.Scanned, Total: scan.Total, Capped: scan.Capped}
	groupNotes, _ := notesByTarget(h.topicNotes(c.Request().Context(), k.Name(), topic))
	for _, g := range scan.Groups {
		notes := groupNotesOf(groupNotes, g)
		g = red.ErrorGroup(g)
		page.Groups = append(page.Groups, kafkapages.ErrorGroupRow{Notes: notes, ExceptionType: g.ExceptionType,
			ExceptionCause: g.ExceptionCause, Count: g.Count, Open: g.Open(), FirstAt: g.FirstAt, LastAt: g.LastAt,
			OriginalTopics: strings.Join(g.OriginalTopics, ", "), SampleMessage: payload.Clip(g.SampleMessage, maxSampleMessage),
			SamplePartition: g.SamplePartition, SampleOffset: g.SampleOffset, ReplayCopies: g.ReplayCopies})
		_, _, page.Groups[len(page.Groups)-1].Masked = redact.GroupRef(g.ExceptionType)
	}
	return render(c, http.StatusOK, kafkapages.Errors(page))
}

// ExportsBy lets the topic page offer "Export matches" to whom s allows (export.min_role).
func (h *Kafka) ExportsBy(s *Search) *Kafka {
	h.exports = s
	return h
}

// searchLinks fills a topic page's content search: the scan the page's script streams (the
// records API, a page of matches at a time, continued by cursor) and the export of the matches.
func (h *Kafka) searchLinks(c echo.Context, page *kafkapages.TopicPage) {
	page.Filter = strings.TrimSpace(c.QueryParam("filter"))
	if page.Filter == "" {
		return
	}
	partition := c.QueryParam("partition")
	if partition == "" {
		partition = "all"
	}
	// The page's state goes with every action it offers (scan, export, plan of the matches): with
	// State = open the page said resolved ones were hidden while the scan matched them (17 where
	// the records API with state=open answered 16).
	q := url.Values{"filter": {page.Filter}, "partition": {partition}, "limit": {"50"}, "max_scan": {"20000"}, "order": {page.Order}, "state": {page.State}}
	page.ScanURL = paths.WithQuery(paths.APIKafkaRecords(page.Cluster, page.Topic), q)
	if h.exports.CanExport(c) {
		e := url.Values{"filter": {page.Filter}, "format": {"ndjson"}, "state": {page.State}}
		if partition != "all" {
			e.Set("partition", partition)
		}
		page.ExportURL = paths.WithQuery(paths.APIKafkaExport(page.Cluster, page.Topic), e)
	}
}
