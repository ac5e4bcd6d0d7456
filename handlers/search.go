package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/search"
)

// SearchCluster is a cluster content search reads; *kafka.Cluster implements it.
type SearchCluster interface {
	Name() string
	search.KafkaSource
	TopicID(ctx context.Context, topic string) (string, error) // whose marks a resolution filter reads (ops/triage)
}

// SearchBroker is a broker content search reads; *rabbit.Broker implements it.
type SearchBroker interface {
	Name() string
	search.RabbitSource
}

// SearchOptions wire content search and export.
type SearchOptions struct {
	Kafka  []SearchCluster // may be empty
	Rabbit []SearchBroker  // may be empty
	// MaxScan is search.max_scan, the most records one request reads; 0 means search.DefaultMaxScan.
	MaxScan int64
	// Timeout is search.timeout; 0 means search.DefaultTimeout.
	Timeout time.Duration
	// ExportMinRole is export.min_role (viewer, operator, admin); "" means operator.
	ExportMinRole string
	Redaction     *redact.Rules // masks content for non-admins; nil masks nothing
	Audit         audit.Log     // content.export rows (intent, then outcome); nil: exports are not audited (tests)
	// Resolutions, when set, answers a Kafka filter's resolution variable for a topic
	// (triage.StateLookup over the store); without it every record is open.
	Resolutions func(ctx context.Context, cluster, topic string) search.ResolutionOf
	// ExportSlots and ScanSlots bound the exports and filter scans running at once, per person and
	// in all (export.max_running*, search.max_running*); nil bounds nothing.
	ExportSlots, ScanSlots *search.Slots
	// ExportWriteTimeout is export.write_timeout: an export whose reader takes nothing for this
	// long is cut. 0 means 30s.
	ExportWriteTimeout time.Duration
}

// Search serves filter scans on the records and messages APIs, and the exports.
type Search struct {
	o       SearchOptions
	kafka   map[string]SearchCluster
	rabbit  map[string]SearchBroker
	exports *search.Exports
}

// NewSearch wires o.
func NewSearch(o SearchOptions) *Search {
	if o.MaxScan <= 0 {
		o.MaxScan = search.DefaultMaxScan
	}
	if o.Timeout <= 0 {
		o.Timeout = search.DefaultTimeout
	}
	if o.ExportWriteTimeout <= 0 {
		o.ExportWriteTimeout = 30 * time.Second
	}
	return &Search{o: o, kafka: byName(o.Kafka), rabbit: byName(o.Rabbit), exports: search.NewExports(o.ExportMinRole, o.Audit)}
}

func (h *Search) cluster(c echo.Context) (SearchCluster, error) {
	return lookup(h.kafka, pathParam(c, "cluster"), "kafka cluster")
}

func (h *Search) broker(c echo.Context) (SearchBroker, error) {
	return lookup(h.rabbit, pathParam(c, "broker"), "rabbitmq broker")
}

// Records answers GET …/topics/:topic/records with a scan when ?filter= is given and hands every
// other request to next (the plain page of records).
func (h *Search) Records(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.QueryParam("filter") == "" {
			return next(c)
		}
		return h.apiKafkaScan(c)
	}
}

// Messages answers GET …/queues/:vhost/:queue/messages with a scan when ?filter= is given and
// hands every other request to next (the plain browse).
func (h *Search) Messages(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.QueryParam("filter") == "" {
			return next(c)
		}
		return h.apiRabbitScan(c)
	}
}

// scanOnlyParams are the records API's parameters that only a filter's scan reads.
var scanOnlyParams = []string{"from_offset", "to_offset", "max_scan"}

// refuseScanOnly refuses a plain page of records (no ?filter=) given a parameter only a scan
// reads: ignored, from_offset=70&to_offset=72 answered the newest records of the partition, as
// if no range had been asked for, and from_offset=abc was a 200.
func refuseScanOnly(c echo.Context) error {
	for _, name := range scanOnlyParams {
		if c.QueryParam(name) != "" {
			return ops.Invalid(name, "is read only by a filter's scan: add filter= (filter=true reads every record of the range); "+
				"a page of records starts at offset= instead")
		}
	}
	return nil
}

// pageOnlyParams are the records API's parameters that only a page of records (no ?filter=) reads.
var pageOnlyParams = map[string]string{
	"offset": "a filter's scan reads the offsets from_offset to to_offset (inclusive) and goes on with the previous answer's next_cursor as cursor",
	"at":     `a filter's scan selects by time in the filter, as in timestamp >= timestamp("2026-11-30T06:00:00Z")`,
}

// refusePageOnly refuses a filter's scan given a parameter only a page of records reads:
// ignored, filter=true&partition=0&offset=5 answered the partition's newest records (80, 79, 78…)
// as if no offset had been asked for, and at= the same.
func refusePageOnly(c echo.Context) error {
	for _, name := range []string{"offset", "at"} {
		if c.QueryParam(name) != "" {
			return ops.Invalid(name, "is read only by a page of records (no filter): "+pageOnlyParams[name])
		}
	}
	return committedOnly(c)
}

// committedOnly refuses isolation=uncommitted where only committed records are read: a filter's
// scan and an export read what the topic's read_committed consumers received, never a record of
// an aborted transaction; an admin reads uncommitted records a page at a time (no filter).
func committedOnly(c echo.Context) error {
	switch c.QueryParam("isolation") {
	case "", "committed":
		return nil
	case "uncommitted":
		return ops.Invalid("isolation", "uncommitted is read only by a page of records (no filter, an admin's): "+
			"scans, exports and plans read what read_committed consumers received")
	}
	return ops.Invalid("isolation", "must be committed or uncommitted")
}

// compile compiles ?filter= for kind ("" is no filter).
func compileFilter(c echo.Context, kind search.Kind) (*search.Filter, error) {
	expr := c.QueryParam("filter")
	if expr == "" {
		return nil, nil
	}
	return search.Compile(kind, expr)
}

// withResolutions makes f answer the resolution variable from the store's marks of the topic.
func (h *Search) withResolutions(c echo.Context, cluster, topic string, f *search.Filter) *search.Filter {
	if f == nil || h.o.Resolutions == nil {
		return f
	}
	return f.WithResolutions(h.o.Resolutions(c.Request().Context(), cluster, topic))
}

// parseScanCursor reads ?cursor=p:offset,p:offset (a previous scan's next_cursor).
func parseScanCursor(raw string) (map[int32]int64, error) {
	if raw == "" {
		return nil, nil
	}
	// A newest-first scan that has read a partition down to offset 0 goes on from -1: done.
	out, ok := parseCursorText(raw, -1)
	if !ok {
		return nil, ops.Invalid("cursor", "must be partition:offset pairs separated by commas, as in the previous answer's next_cursor")
	}
	return out, nil
}

// scanPartition reads ?partition=: "all" or absent is every partition (nil), else one.
func scanPartition(c echo.Context) (*int32, error) {
	raw := c.QueryParam("partition")
	if raw == "" || raw == "all" {
		return nil, nil
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 0 {
		return nil, ops.Invalid("partition", "must be all or a partition number")
	}
	p := int32(n)
	return &p, nil
}

func queryOffset(c echo.Context, name string) (*int64, error) {
	return optionalCount(name, c.QueryParam(name))
}

// scanSummary is what a scan reports beside its matches.
type scanSummary struct {
	Filter     string  `json:"filter"`
	Scanned    int64   `json:"scanned"`
	Matched    int64   `json:"matched"`
	Stopped    string  `json:"stopped"` // limit, max_scan, timeout or end
	Exhausted  bool    `json:"exhausted"`
	NextCursor *string `json:"next_cursor"`
	EvalErrors int64   `json:"eval_errors"`
	EvalError  string  `json:"eval_error,omitempty"`
	ElapsedMS  int64   `json:"elapsed_ms"`
}

// kafkaScanQuery reads a scan's parameters.
func (h *Search) kafkaScanQuery(c echo.Context) (search.Query, error) {
	q := search.Query{Topic: pathParam(c, "topic"), Timeout: h.o.Timeout}
	if err := kafkaRange(c, &q); err != nil {
		return q, err
	}
	switch o := c.QueryParam("order"); o {
	case "", "newest", "oldest":
		q.Order = o
	default:
		return q, ops.Invalid("order", "must be newest or oldest")
	}
	limit, err := queryInt(c, "limit", kafkamodel.DefaultLimit, 1, kafkamodel.MaxLimit)
	if err != nil {
		return q, err
	}
	q.Limit = int(limit)
	if q.MaxScan, err = queryInt(c, "max_scan", min(search.DefaultMaxScan, h.o.MaxScan), 1, h.o.MaxScan); err != nil {
		return q, err
	}
	q.Cursor, err = parseScanCursor(c.QueryParam("cursor"))
	return q, err
}

// kafkaRange reads what a scan and an export of a topic both take: the filter, the partition
// (one, or all) and the offset range.
func kafkaRange(c echo.Context, q *search.Query) error {
	var err error
	if q.Filter, err = compileFilter(c, search.Kafka); err != nil {
		return err
	}
	if q.Partition, err = scanPartition(c); err != nil {
		return err
	}
	if q.FromOffset, err = queryOffset(c, "from_offset"); err != nil {
		return err
	}
	if q.ToOffset, err = queryOffset(c, "to_offset"); err != nil {
		return err
	}
	if q.FromOffset != nil && q.ToOffset != nil && *q.ToOffset < *q.FromOffset {
		return ops.Invalid("to_offset", fmt.Sprintf("must not be below from_offset (%d): the range is inclusive, so this one holds nothing", *q.FromOffset))
	}
	return nil
}

func rawParam(c echo.Context) (bool, error) {
	switch c.QueryParam("raw") {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, ops.Invalid("raw", "must be true or false")
}

// startScan reads what every scan reads after its own parameters — stream= and the person's
// redaction of target — and then takes one of the person's scan slots (search.max_running*), which
// release gives back.
func (h *Search) startScan(c echo.Context, target string) (stream bool, red *redact.Rules, release func(), err error) {
	if stream, err = queryBool(c, "stream"); err != nil {
		return false, nil, nil, err
	}
	if red, err = redactionFor(c, h.o.Redaction, target); err != nil {
		return false, nil, nil, err
	}
	if release, err = h.o.ScanSlots.Take(ActorOf(c).Person()); err != nil {
		return false, nil, nil, err
	}
	return stream, red, release, nil
}

// apiKafkaScan: GET /api/v1/kafka/:cluster/topics/:topic/records?filter=… — reads the topic
// (partition=all or one) until limit matches, max_scan records or search.timeout, and answers the
// matches with how far it read and the cursor to go on. The filter sees what the caller may see:
// masked content stays masked to it. ?stream=true answers NDJSON as the scan goes: {"match":
// record} lines, {"progress": {scanned, matched}} lines, and a last {"done": summary} (or
// {"error": …}) line.
func (h *Search) apiKafkaScan(c echo.Context) error {
	k, err := h.cluster(c)
	if err != nil {
		return err
	}
	q, err := h.kafkaScanQuery(c)
	if err != nil {
		return err
	}
	if err := refusePageOnly(c); err != nil {
		return err
	}
	// The records in that resolution state, as on a page of records: a scan read every state
	// whatever state= said (state=resolved matched all 241 records of orders.DLT, 0 resolved).
	state, err := recordState(c, "all")
	if err != nil {
		return err
	}
	q.Filter = h.withResolutions(c, k.Name(), q.Topic, q.Filter).InState(state)
	raw, err := rawParam(c)
	if err != nil {
		return err
	}
	stream, red, release, err := h.startScan(c, "kafka/"+k.Name()+"/"+q.Topic)
	if err != nil {
		return err
	}
	defer release()
	started := time.Now()
	lastRedacted := false
	if red != nil {
		q.View = func(r kafkamodel.Record) kafkamodel.Record {
			r, lastRedacted = red.Record(r)
			return r
		}
	}
	toJSON := func(r kafkamodel.Record) recordJSON {
		j := toRecordJSON(r, raw)
		j.Redacted = lastRedacted
		return j
	}
	if stream {
		w := newNDJSON(c)
		q.Each = func(r kafkamodel.Record) error { return w.line(matchLine[recordJSON]{toJSON(r)}, false) }
		q.Progress = w.progress
		res, err := search.ScanKafka(c.Request().Context(), k, q)
		return w.end(kafkaSummary(q, res, started), err)
	}
	out := []recordJSON{}
	q.Each = func(r kafkamodel.Record) error {
		out = append(out, toJSON(r))
		return nil
	}
	res, err := search.ScanKafka(c.Request().Context(), k, q)
	if err != nil {
		return err
	}
	parts := make([]dltPartitionJSON, 0, len(res.Partitions))
	for _, p := range res.Partitions {
		parts = append(parts, toPartitionJSON(p))
	}
	var partition any = "all"
	if q.Partition != nil {
		partition = *q.Partition
	}
	order := q.Order
	if order == "" {
		order = "newest"
	}
	return c.JSON(http.StatusOK, kafkaSearchJSON{out, partition, order, parts, kafkaSummary(q, res, started)})
}

// kafkaSearchJSON is a search's matches in a topic, with what was scanned.
type kafkaSearchJSON struct {
	Records    []recordJSON       `json:"records"`
	Partition  any                `json:"partition"`
	Order      string             `json:"order"`
	Partitions []dltPartitionJSON `json:"partitions"`
	scanSummary
}

func kafkaSummary(q search.Query, res search.Result, started time.Time) scanSummary {
	s := scanSummary{Scanned: res.Scanned, Matched: res.Matched, Stopped: res.Stopped, Exhausted: res.Exhausted,
		EvalErrors: res.EvalErrors, EvalError: res.EvalError, ElapsedMS: time.Since(started).Milliseconds()}
	if q.Filter != nil {
		s.Filter = q.Filter.Text()
	}
	if cur := cursorText(res.Next); cur != "" {
		s.NextCursor = &cur
	}
	return s
}

// apiRabbitScan: GET /api/v1/rabbitmq/:broker/queues/:vhost/:queue/messages?filter=… — browses up
// to max_scan messages of the queue's head (as a browse: the queue is left as it was) and answers
// the first limit matches. A queue has no cursor: next_cursor is always null. ?stream=true as for
// Kafka.
func (h *Search) apiRabbitScan(c echo.Context) error {
	b, err := h.broker(c)
	if err != nil {
		return err
	}
	f, err := compileFilter(c, search.RabbitMQ)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", defaultBrowse, 1, rabbitmodel.MaxBrowse)
	if err != nil {
		return err
	}
	maxScan, err := queryInt(c, "max_scan", min(rabbitmodel.MaxPeek, h.o.MaxScan), 1, min(rabbitmodel.MaxPeek, h.o.MaxScan))
	if err != nil {
		return err
	}
	vhost, queue := pathParam(c, "vhost"), pathParam(c, "queue")
	stream, red, release, err := h.startScan(c, fmt.Sprintf("rabbitmq/%s/%s/%s", b.Name(), vhost, queue))
	if err != nil {
		return err
	}
	defer release()
	q := search.RabbitQuery{Vhost: vhost, Queue: queue, Filter: f, Limit: int(limit), MaxScan: int(maxScan), Timeout: h.o.Timeout}
	var last redact.Message
	q.View = red.View(&last)
	started := time.Now()
	if stream {
		w := newNDJSON(c)
		q.Each = func(rabbitmodel.Message) error {
			return w.line(matchLine[rabbitMessageJSON]{toRabbitMessageJSON(last)}, false)
		}
		q.Progress = w.progress
		res, err := search.ScanRabbit(c.Request().Context(), b, q)
		return w.end(rabbitSummary(f, res, started), err)
	}
	msgs := []rabbitMessageJSON{}
	q.Each = func(rabbitmodel.Message) error {
		msgs = append(msgs, toRabbitMessageJSON(last))
		return nil
	}
	res, err := search.ScanRabbit(c.Request().Context(), b, q)
	if err != nil {
		return err
	}
	notes := res.Browse.Notes
	if notes == nil {
		notes = []string{}
	}
	return c.JSON(http.StatusOK, rabbitSearchJSON{b.Name(), vhost, queue, res.Browse.Ready, res.Browse.Complete, notes, msgs, rabbitSummary(f, res, started)})
}

// rabbitSearchJSON is a search's matches in a queue, with what was scanned.
type rabbitSearchJSON struct {
	Broker   string              `json:"broker"`
	Vhost    string              `json:"vhost"`
	Queue    string              `json:"queue"`
	Ready    int64               `json:"ready"`
	Complete bool                `json:"complete"`
	Notes    []string            `json:"notes"`
	Messages []rabbitMessageJSON `json:"messages"`
	scanSummary
}

func rabbitSummary(f *search.Filter, res search.RabbitResult, started time.Time) scanSummary {
	s := scanSummary{Scanned: res.Scanned, Matched: res.Matched, Stopped: res.Stopped, Exhausted: res.Exhausted,
		EvalErrors: res.EvalErrors, EvalError: res.EvalError, ElapsedMS: time.Since(started).Milliseconds()}
	if f != nil {
		s.Filter = f.Text()
	}
	return s
}

// The lines of a streamed search (NDJSON): matches and progress as they come, then one done line
// or one error line.
type (
	matchLine[M recordJSON | rabbitMessageJSON] struct {
		Match M `json:"match"`
	}
	progressLine struct {
		Progress progressJSON `json:"progress"`
	}
	progressJSON struct {
		Scanned int64 `json:"scanned"`
		Matched int64 `json:"matched"`
	}
	doneLine struct {
		Done scanSummary `json:"done"`
	}
	errorLine struct {
		Error streamErrorJSON `json:"error"`
	}
	streamErrorJSON struct {
		Message string `json:"message"`
	}
)

// ndjson writes a streamed answer one JSON line at a time, flushing at most every 100 ms (and on
// the last line), so matches show as they are found without a write per record.
type ndjson struct {
	c       echo.Context
	enc     *json.Encoder
	flushed time.Time
	started bool
}

func newNDJSON(c echo.Context) *ndjson {
	return &ndjson{c: c, enc: json.NewEncoder(c.Response())}
}

func (w *ndjson) start() {
	if !w.started {
		w.started = true
		h := w.c.Response().Header()
		h.Set(echo.HeaderContentType, "application/x-ndjson; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		w.c.Response().WriteHeader(http.StatusOK)
	}
}

func (w *ndjson) line(v any, last bool) error {
	w.start()
	if err := w.enc.Encode(v); err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	if last || time.Since(w.flushed) > 100*time.Millisecond {
		w.c.Response().Flush()
		w.flushed = time.Now()
	}
	return nil
}

// progress writes a scan's progress line (a scan's Progress); a line lost on the way only shows a
// number late, so its error is not the scan's.
func (w *ndjson) progress(scanned, matched int64) {
	_ = w.line(progressLine{progressJSON{scanned, matched}}, false)
}

// end ends a scan's stream with its summary (a done line), or as fail does when the scan failed.
func (w *ndjson) end(s scanSummary, err error) error {
	if err != nil {
		return w.fail(err)
	}
	return w.line(doneLine{s}, true)
}

// fail ends a stream with an error line (the status is already sent), or answers the error as
// usual when nothing was written yet.
func (w *ndjson) fail(err error) error {
	if !w.started {
		return err
	}
	_ = w.line(errorLine{streamErrorJSON{shown(w.c, err)}}, true)
	return nil
}
