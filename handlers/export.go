package handlers

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/search"
)

// exportFormat reads ?format=ndjson (default) or csv.
func exportFormat(c echo.Context) (string, error) {
	switch f := c.QueryParam("format"); f {
	case "", "ndjson":
		return "ndjson", nil
	case "csv":
		return "csv", nil
	default:
		return "", ops.Invalid("format", "must be ndjson or csv")
	}
}

// exportOf starts an export: refused before anything is looked up when the actor may not export
// (export.min_role), then the source the path names (find) and the format asked (exportFormat),
// then a slot among the exports running (export.max_running, export.max_running_per_person) —
// release gives it back, and must be called whatever happens.
func exportOf[S any](h *Search, c echo.Context, find func(echo.Context) (S, error)) (src S, format string, release func(), err error) {
	release = func() {}
	if err := h.exports.Allow(ActorOf(c)); err != nil {
		return src, "", release, err
	}
	if src, err = find(c); err != nil {
		return src, "", release, err
	}
	if format, err = exportFormat(c); err != nil {
		return src, "", release, err
	}
	release, err = h.o.ExportSlots.Take(ActorOf(c).Person())
	if err != nil {
		return src, "", func() {}, err
	}
	return src, format, release, nil
}

// ExportMinRole is the least role of the export routes (search.Exports.MinRole).
func (h *Search) ExportMinRole() access.Role {
	if h == nil {
		return access.Operator
	}
	return h.exports.MinRole()
}

// CanExport reports whether the request's actor may export (export.min_role): pages offer the
// button only then.
func (h *Search) CanExport(c echo.Context) bool {
	return h != nil && h.exports.Allow(ActorOf(c)) == nil
}

// exportWriter streams records as NDJSON or CSV with flat memory: each line is encoded and written
// as it comes, flushed every 64 KiB or so by the buffered response.
type exportWriter struct {
	c      echo.Context
	format string
	enc    *json.Encoder
	csv    *csv.Writer
	n      int64
	since  int // lines since the last flush
	// rc and timeout set each write's deadline: an export outlives request_timeout, but not a
	// reader that takes none of it for timeout (export.write_timeout).
	rc      *http.ResponseController
	timeout time.Duration
}

// exportFileName is the download's name from source (a topic or queue name, which anyone who can
// create a queue chooses): only letters, digits, '.', '_' and '-' of it, at most 100, so that no
// quote, separator, path or control character shapes the Content-Disposition header or the file
// the browser saves; "export" when nothing is left.
func exportFileName(source string) string {
	var b strings.Builder
	for _, r := range source {
		if b.Len() >= 100 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == '.' && b.Len() > 0: // never a leading dot (a hidden file, "..")
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	name := strings.Trim(b.String(), "._")
	if name == "" {
		return "export"
	}
	return name
}

func newExportWriter(c echo.Context, format, source string, header []string, timeout time.Duration) *exportWriter {
	w := &exportWriter{c: c, format: format, rc: http.NewResponseController(c.Response().Writer), timeout: timeout}
	w.deadline()
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	filename := exportFileName(source)
	if format == "csv" {
		h.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
		h.Set(echo.HeaderContentDisposition, `attachment; filename="`+filename+`.csv"`)
		w.csv = csv.NewWriter(c.Response())
		_ = w.csv.Write(header)
	} else {
		h.Set(echo.HeaderContentType, "application/x-ndjson; charset=utf-8")
		h.Set(echo.HeaderContentDisposition, `attachment; filename="`+filename+`.ndjson"`)
		w.enc = json.NewEncoder(c.Response())
	}
	c.Response().WriteHeader(http.StatusOK)
	return w
}

// deadline gives the connection's next writes timeout from now: the export goes on for as long as
// its reader takes it (request_timeout does not bound it), and ends when the reader stalls.
func (w *exportWriter) deadline() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
}

func (w *exportWriter) write(obj any, row []string) error {
	w.deadline()
	var err error
	if w.csv != nil {
		err = w.csv.Write(csvCells(row))
	} else {
		err = w.enc.Encode(obj)
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	w.n++
	if w.since++; w.since >= 500 {
		w.since = 0
		if w.csv != nil {
			w.csv.Flush()
		}
		w.c.Response().Flush()
	}
	return nil
}

// csvCells neutralises formulas (OWASP's CSV injection guidance): a cell that starts with =, +,
// -, @, a tab or a carriage return is read by a spreadsheet as a formula, so a dead letter whose
// key is =HYPERLINK("http://evil","x") would run in whoever opens the export. Such a cell gets a
// leading single quote, which spreadsheets show as text and do not display; every cell is treated
// alike (a negative number is never one of ours: partitions, offsets and times are not), and the
// NDJSON export, read by programs, carries the content unchanged.
//
// Control and bidi characters are written out as text too (ops.InertText): an ESC sequence in a
// key would recolour the terminal that cats the export, a right-to-left override would make a
// spreadsheet show a cell reversed.
func csvCells(row []string) []string {
	for i, cell := range row {
		cell = ops.InertText(cell)
		if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
			cell = "'" + cell
		}
		row[i] = cell
	}
	return row
}

func (w *exportWriter) close() {
	if w.csv != nil {
		w.csv.Flush()
	}
	w.c.Response().Flush()
}

// beginExport starts the request's export of target (search.Exports.Begin): its audit row
// carries the request's actor and client.
func (h *Search) beginExport(c echo.Context, target string, filter *search.Filter, detail map[string]any) (*search.Export, error) {
	row := auditEntry(c, "content.export", target, "", detail)
	return h.exports.Begin(c.Request().Context(), loggerOf(c), ActorOf(c), row, filter)
}

var kafkaCSVHeader = []string{"partition", "offset", "timestamp", "key", "value", "value_encoding", "headers",
	"original_topic", "exception_type", "exception_message", "message_id", "redacted", "value_truncated"}

// ExportKafka: GET /api/v1/kafka/:cluster/topics/:topic/export?format=ndjson|csv&filter=&partition=&from_offset=&to_offset=&state=
// streams every record of the range (oldest first, partition by partition) that the filter
// matches: NDJSON in the records API's shape, or CSV with the main columns. Content is masked
// unless an admin reveals it (reveal=true, audited); the export is audited as content.export.
func (h *Search) ExportKafka(c echo.Context) error {
	k, format, release, err := exportOf(h, c, h.cluster)
	defer release()
	if err != nil {
		return err
	}
	q := search.Query{Topic: pathParam(c, "topic"), Order: "oldest"}
	if err := committedOnly(c); err != nil {
		return err
	}
	if err := kafkaRange(c, &q); err != nil {
		return err
	}
	// The records in that resolution state, as the scan and the page keep theirs.
	state, err := recordState(c, "all")
	if err != nil {
		return err
	}
	if state != "all" && q.Filter == nil {
		if q.Filter, err = search.Compile(search.Kafka, "true"); err != nil {
			return err
		}
	}
	q.Filter = h.withResolutions(c, k.Name(), q.Topic, q.Filter).InState(state)
	raw, err := rawParam(c)
	if err != nil {
		return err
	}
	target := "kafka/" + k.Name() + "/" + q.Topic
	red, err := redactionFor(c, h.o.Redaction, target)
	if err != nil {
		return err
	}
	// Fail before the first byte on what can be known: the topic and partition.
	parts, err := k.Partitions(c.Request().Context(), q.Topic)
	if err != nil {
		return err
	}
	if q.Partition != nil && (*q.Partition >= int32(len(parts))) {
		return ops.Invalid("partition", fmt.Sprintf("must be in [0, %d) for topic %s", len(parts), q.Topic))
	}
	detail := map[string]any{"format": format, "revealed": red == nil && h.o.Redaction.Active()}
	if q.Partition != nil {
		detail["partition"] = *q.Partition
	}
	export, err := h.beginExport(c, target, q.Filter, detail)
	if err != nil {
		return err
	}
	redacted := false
	q.View = func(r kafkamodel.Record) kafkamodel.Record {
		r, redacted = red.Record(r)
		return r
	}
	w := newExportWriter(c, format, q.Topic, kafkaCSVHeader, h.o.ExportWriteTimeout)
	q.Each = func(r kafkamodel.Record) error {
		j := toRecordJSON(r, raw)
		j.Redacted = redacted
		if format == "ndjson" {
			return w.write(j, nil)
		}
		var original, exType, exMsg, id string
		if d := j.DeadLetter; d != nil {
			original, exType, exMsg, id = d.OriginalTopic, d.ExceptionType, d.ExceptionMessage, d.MessageID
		}
		hs, _ := json.Marshal(j.Headers)
		return w.write(nil, []string{strconv.Itoa(int(j.Partition)), strconv.FormatInt(j.Offset, 10), j.Timestamp.Format(time.RFC3339Nano),
			deref(j.Key), deref(j.Value), j.ValueEncoding, string(hs), original, exType, exMsg, id, strconv.FormatBool(redacted),
			strconv.FormatBool(j.ValueTruncated)})
	}
	res, err := search.ScanKafka(c.Request().Context(), k, q)
	w.close()
	export.Finish(w.n, map[string]any{"scanned": res.Scanned}, endedEarly(err))
	return nil // the status is sent: an error shows as a cut stream (and in the audit row)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// endedEarly is the error an export ended with, nil when it was whole.
func endedEarly(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

var rabbitCSVHeader = []string{"position", "message_id", "exchange", "routing_key", "timestamp", "body", "body_encoding", "headers",
	"reason", "original_queue", "exception_message", "redacted"}

// ExportRabbit: GET /api/v1/rabbitmq/:broker/queues/:vhost/:queue/export?format=&filter=&max_scan=
// streams the messages of the queue's head (up to max_scan, at most rabbitmodel.MaxPeek, read as a
// browse: the queue is left as it was) that the filter matches, as ExportKafka.
func (h *Search) ExportRabbit(c echo.Context) error {
	b, format, release, err := exportOf(h, c, h.broker)
	defer release()
	if err != nil {
		return err
	}
	f, err := compileFilter(c, search.RabbitMQ)
	if err != nil {
		return err
	}
	maxScan, err := queryInt(c, "max_scan", rabbitmodel.MaxPeek, 1, rabbitmodel.MaxPeek)
	if err != nil {
		return err
	}
	vhost, queue := pathParam(c, "vhost"), pathParam(c, "queue")
	target := fmt.Sprintf("rabbitmq/%s/%s/%s", b.Name(), vhost, queue)
	red, err := redactionFor(c, h.o.Redaction, target)
	if err != nil {
		return err
	}
	export, err := h.beginExport(c, target, f, map[string]any{"format": format, "revealed": red == nil && h.o.Redaction.Active()})
	if err != nil {
		return err
	}
	q := search.RabbitQuery{Vhost: vhost, Queue: queue, Filter: f, MaxScan: int(maxScan)}
	var last redact.Message
	q.View = red.View(&last)
	var w *exportWriter
	q.Each = func(rabbitmodel.Message) error {
		if w == nil {
			w = newExportWriter(c, format, queue, rabbitCSVHeader, h.o.ExportWriteTimeout)
		}
		j := toRabbitMessageJSON(last)
		j.BodyRedacted = last.BodyRedacted
		if format == "ndjson" {
			return w.write(struct {
				rabbitMessageJSON
				Redacted bool `json:"redacted"`
			}{j, last.Redacted}, nil)
		}
		var reason, orig, exMsg, ts string
		if d := j.DeadLetter; d != nil {
			reason, orig, exMsg = d.Reason, d.OriginalQueue, d.ExceptionMessage
		}
		if j.Properties.Timestamp != nil {
			ts = j.Properties.Timestamp.Format(time.RFC3339)
		}
		hs, _ := json.Marshal(j.Headers)
		return w.write(nil, []string{strconv.Itoa(j.Position), j.MessageID, j.Exchange, j.RoutingKey, ts, j.Body, j.BodyEncoding,
			string(hs), reason, orig, exMsg, strconv.FormatBool(last.Redacted)})
	}
	res, err := search.ScanRabbit(c.Request().Context(), b, q)
	if w == nil {
		if err != nil {
			export.Finish(0, map[string]any{"scanned": res.Scanned}, err)
			return err // nothing sent yet: the usual error answer
		}
		w = newExportWriter(c, format, queue, rabbitCSVHeader, h.o.ExportWriteTimeout)
	}
	w.close()
	export.Finish(w.n, map[string]any{"scanned": res.Scanned}, endedEarly(err))
	return nil
}
