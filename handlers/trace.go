package handlers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/trace"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/components"
	tracepages "github.com/redrive/redrive/views/pages/trace"
)

// Tracer follows one message (or one aggregate's messages) across every source (ops/trace).
type Tracer interface {
	Trace(ctx context.Context, q trace.Query) (trace.Result, error)
}

// Trace serves the /trace page, its event stream and GET /api/v1/trace.
type Trace struct {
	t    Tracer
	meta MetaFunc
	red  *redact.Rules
}

// NewTrace wires the tracer; red masks what the steps quote of message content (nil masks nothing).
func NewTrace(t Tracer, meta MetaFunc, red *redact.Rules) *Trace {
	return &Trace{t: t, meta: meta, red: red}
}

// traceParams are the query parameters a trace reads, in the order a page's links carry them.
var traceParams = []string{"message_id", "event_id", "aggregate_id", "trace_id", "q", "since", "until"}

// parseTraceQuery reads the ids and the time window; no id, or a time that does not parse, is a
// 400 saying what to give.
func (h *Trace) parseTraceQuery(c echo.Context) (trace.Query, error) {
	if h.t == nil {
		return trace.Query{}, ops.NotFound("tracing is not configured")
	}
	q := trace.Query{MessageID: c.QueryParam("message_id"), EventID: c.QueryParam("event_id"),
		AggregateID: c.QueryParam("aggregate_id"), TraceID: c.QueryParam("trace_id"), Any: c.QueryParam("q")}
	var err error
	if q.Since, err = optionalTime(c, "since", time.Now()); err != nil {
		return q, err
	}
	if q.Until, err = optionalTime(c, "until", time.Now()); err != nil {
		return q, err
	}
	if err := q.Validate(); err != nil {
		return q, err
	}
	red, err := redactionFor(c, h.red, "trace")
	if err != nil {
		return q, err
	}
	q.AuditContent = red == nil // a masked reader's guess is not confirmed by an edit's values
	if red != nil {
		q.OutboxView = func(e outbox.Event) outbox.Event { out, _ := red.OutboxEvent(e); return out }
		q.KafkaView = func(r kafkamodel.Record) kafkamodel.Record { out, _ := red.Record(r); return out }
		q.RabbitView = red.Shown
	}
	return q, nil
}

type traceStepJSON struct {
	Kind   string     `json:"kind"`
	Source string     `json:"source"`
	Found  bool       `json:"found"`
	At     *time.Time `json:"at"`
	Place  string     `json:"place"`
	Detail string     `json:"detail"`
	Link   string     `json:"link"`
}

// API: GET /api/v1/trace?message_id=|event_id=|aggregate_id=|trace_id=&since=&until= — every
// source's steps at once, with the verdict.
func (h *Trace) API(c echo.Context) error {
	q, err := h.parseTraceQuery(c)
	if err != nil {
		return err
	}
	res, err := h.t.Trace(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := struct {
		Verdict string          `json:"verdict"`
		Steps   []traceStepJSON `json:"steps"`
	}{Verdict: res.Verdict, Steps: make([]traceStepJSON, 0, len(res.Steps))}
	for _, s := range res.Steps {
		out.Steps = append(out.Steps, traceStepJSON{Kind: s.Kind, Source: s.Source, Found: s.Found, At: s.At,
			Place: s.Place, Detail: s.Detail, Link: stepLink(s)})
	}
	return c.JSON(http.StatusOK, out)
}

// Page: GET /trace — the search form; with an id, the timeline, whose steps the page's script
// streams from /trace/stream as each source answers. wait=1 (the no-script link) answers whole.
func (h *Trace) Page(c echo.Context) error {
	p := tracepages.Page{Meta: h.meta(c, "Trace", "trace"), Form: traceForm(c)}
	if !p.Form.Any() {
		return render(c, http.StatusOK, tracepages.Show(p))
	}
	q, err := h.parseTraceQuery(c)
	if err != nil {
		return err
	}
	p.Subject = q.Subject()
	v := traceValues(c)
	p.StreamURL = paths.WithQuery(paths.TraceStream, v)
	v.Set("wait", "1")
	p.WholeURL = paths.WithQuery(paths.Trace, v)
	if c.QueryParam("wait") == "1" {
		res, err := h.t.Trace(c.Request().Context(), q)
		if err != nil {
			return err
		}
		p.Result = &tracepages.Result{Verdict: res.Verdict, Steps: stepViews(res.Steps)}
	}
	return render(c, http.StatusOK, tracepages.Show(p))
}

// Stream: GET /trace/stream — server-sent events: "steps" with each source's timeline rows as
// they answer, then "done" with the whole result (verdict and the timeline in order).
func (h *Trace) Stream(c echo.Context) error {
	q, err := h.parseTraceQuery(c)
	if err != nil {
		return err
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set(echo.HeaderCacheControl, "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // a proxy in front must not hold the events back
	w.WriteHeader(http.StatusOK)
	ctx := c.Request().Context()
	write := func(event string, html []byte) {
		_, _ = w.Write(sseEvent(event, components.VisibleHTML(html)))
		w.Flush()
	}
	q.Each = func(steps []trace.Step) {
		var buf bytes.Buffer
		if err := tracepages.Steps(stepViews(steps)).Render(context.WithoutCancel(ctx), &buf); err == nil {
			write("steps", buf.Bytes())
		}
	}
	res, err := h.t.Trace(ctx, q)
	if err != nil {
		return nil // the status is sent; the page keeps what it has
	}
	var buf bytes.Buffer
	if err := tracepages.ResultBlock(tracepages.Result{Verdict: res.Verdict, Steps: stepViews(res.Steps)}).Render(context.WithoutCancel(ctx), &buf); err != nil {
		return fmt.Errorf("render trace: %w", err)
	}
	write("done", buf.Bytes())
	return nil
}

func traceForm(c echo.Context) tracepages.Form {
	return tracepages.Form{MessageID: c.QueryParam("message_id"), EventID: c.QueryParam("event_id"),
		AggregateID: c.QueryParam("aggregate_id"), TraceID: c.QueryParam("trace_id"), ID: c.QueryParam("q"),
		Since: c.QueryParam("since"), Until: c.QueryParam("until")}
}

// traceValues are the request's trace parameters, for the stream's URL.
func traceValues(c echo.Context) url.Values {
	v := url.Values{}
	for _, k := range traceParams {
		if s := c.QueryParam(k); s != "" {
			v.Set(k, s)
		}
	}
	return v
}

func stepViews(steps []trace.Step) []tracepages.StepView {
	out := make([]tracepages.StepView, 0, len(steps))
	for _, s := range steps {
		out = append(out, tracepages.StepView{Kind: s.Kind, Source: s.Source, Found: s.Found, Down: s.Down,
			At: s.At, Place: s.Place, Detail: s.Detail, Link: stepLink(s)})
	}
	return out
}

// stepLink is the console page of a step's place ("" when it has none).
func stepLink(s trace.Step) string {
	r := s.Ref
	switch s.Kind {
	case trace.KindOutbox:
		switch {
		case r.Outbox == "":
			return ""
		case r.EventID > 0:
			return paths.OutboxEvent(r.Outbox, r.EventID)
		}
		return paths.Outbox(r.Outbox)
	case trace.KindKafka:
		switch {
		case r.Cluster == "":
			return ""
		case r.Topic == "":
			return paths.KafkaCluster(r.Cluster)
		case r.Offset >= 0:
			return paths.WithQuery(paths.KafkaTopic(r.Cluster, r.Topic), url.Values{
				"partition": {strconv.Itoa(int(r.Partition))}, "offset": {strconv.FormatInt(r.Offset, 10)}})
		}
		return paths.KafkaTopic(r.Cluster, r.Topic)
	case trace.KindRabbitMQ:
		switch {
		case r.Broker == "":
			return ""
		case r.Queue == "":
			return paths.RabbitBroker(r.Broker)
		case !s.Found:
			// Not found there, or not browsed at all (an auto-delete queue, which a read would
			// delete; an exclusive one, which only its owner's connection may read): the queue's
			// page, which offers a browse where one can be had and says why not where not; a link
			// to the messages would lead to the refusal.
			return paths.Queue(r.Broker, r.Vhost, r.Queue)
		}
		return paths.QueueMessages(r.Broker, r.Vhost, r.Queue)
	case trace.KindReplay:
		if r.JobID != "" {
			return paths.Replay(r.JobID)
		}
	case trace.KindAudit:
		if r.AuditID > 0 {
			// The audit list shows entries below its cursor: this one heads the page.
			return paths.WithQuery(paths.Audit, url.Values{"cursor": {strconv.FormatInt(r.AuditID+1, 10)}})
		}
	}
	return ""
}

// sseEvent frames html as one server-sent event: a data line for each of its lines. An
// EventSource ends a line at CR, LF or both, and message content keeps its CRs (an exception's
// text): split on LF alone, a CR in a step's detail cut the rest of the event off, and
// "x\revent: done\rdata: …" in a header made the page take its steps for the end.
func sseEvent(event string, html []byte) []byte {
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	text := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(html))
	for _, line := range strings.Split(text, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return []byte(b.String())
}
