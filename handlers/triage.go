package handlers

import (
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
	"github.com/redrive/redrive/ops/redact"
	"github.com/redrive/redrive/ops/triage"
	"github.com/redrive/redrive/paths"
	kafkapages "github.com/redrive/redrive/views/pages/kafka"
)

// Triage is what the Kafka pages and API need of ops/triage; *triage.Triage implements it.
type Triage interface {
	Resolve(ctx context.Context, r triage.Request) (triage.Result, error)
	Resolutions(ctx context.Context, cluster, topic string, recs []kafkamodel.Record) (map[triage.RecordKey]triage.Resolution, error)
	OpenByErrorGroup(ctx context.Context, cluster string, scan kafkamodel.ErrorScan) (kafkamodel.ErrorScan, error)
	OpenCounts(ctx context.Context, cluster string, topics []kafkamodel.DLTopic) ([]kafkamodel.DLTopic, error)
	AddNote(ctx context.Context, r triage.NoteRequest) (triage.Note, error)
	Notes(ctx context.Context, cluster, topic string) ([]triage.Note, error)
}

// SetTriage wires the resolution state of dead letters into the Kafka pages and API; without it
// every record reads as open and resolving answers 503.
func (h *Kafka) SetTriage(t Triage) { h.triage = t }

// resolutionJSON is a record's resolution as the API gives it; state "open" with the rest empty
// for a record nobody marked.
type resolutionJSON struct {
	State  string     `json:"state"`
	By     string     `json:"by"`
	At     *time.Time `json:"at"`
	Reason string     `json:"reason"`
	JobID  string     `json:"job_id"`
}

func toResolutionJSON(r triage.Resolution) *resolutionJSON {
	j := &resolutionJSON{State: r.State, By: r.Actor, At: knownUTC(r.At), Reason: r.Reason, JobID: r.JobID}
	if j.State == "" {
		j.State = triage.StateOpen
	}
	return j
}

// withResolutions reads the resolutions of recs and keeps those in state ("all" keeps every
// record). Without a store every record is open.
func (h *Kafka) withResolutions(ctx context.Context, cluster, topic string, recs []kafkamodel.Record, state string) ([]kafkamodel.Record, map[triage.RecordKey]triage.Resolution, error) {
	res := map[triage.RecordKey]triage.Resolution{}
	if h.triage != nil && len(recs) > 0 {
		var err error
		if res, err = h.triage.Resolutions(ctx, cluster, topic, recs); err != nil {
			return nil, nil, err
		}
	}
	if state == "all" {
		return recs, res, nil
	}
	kept := recs[:0:0]
	for _, r := range recs {
		st := res[triage.RecordKey{Partition: r.Partition, Offset: r.Offset}].State
		if st == "" {
			st = triage.StateOpen
		}
		if st == state {
			kept = append(kept, r)
		}
	}
	return kept, res, nil
}

func resolutionOf(res map[triage.RecordKey]triage.Resolution, r kafkamodel.Record) triage.Resolution {
	out := res[triage.RecordKey{Partition: r.Partition, Offset: r.Offset}]
	if out.State == "" {
		out.State = triage.StateOpen
	}
	return out
}

// resolutionRequest is the body of POST …/topics/:topic/resolutions.
type resolutionRequest struct {
	Records    []recordRefJSON    `json:"records"`
	ErrorGroup *errorGroupRefJSON `json:"error_group"`
	Filter     *resolveFilterIn   `json:"filter"`
	State      string             `json:"state"`
	Reason     string             `json:"reason"`
}

type recordRefJSON struct {
	Partition *int32 `json:"partition"`
	Offset    *int64 `json:"offset"`
}

type errorGroupRefJSON struct {
	ExceptionType  string  `json:"exception_type"`
	ExceptionCause *string `json:"exception_cause"`
}

// resolveFilterIn is a filter as a replay plan gives one: a CEL expression (ops/search) and the
// exact fields beside it.
type resolveFilterIn struct {
	CEL           string `json:"cel"`
	ExceptionType string `json:"exception_type"`
	OriginalTopic string `json:"original_topic"`
	Since         string `json:"since"` // as a replay plan's: RFC 3339, a date, or an age like 6h
	Until         string `json:"until"`
}

// filter is the selection f gives, its times read as of now.
func (f resolveFilterIn) filter(now time.Time) (*triage.Filter, error) {
	tf := &triage.Filter{CEL: f.CEL, ExceptionType: f.ExceptionType, OriginalTopic: f.OriginalTopic}
	var err error
	if tf.Since, err = bodyTime("filter.since", f.Since, now); err != nil {
		return nil, err
	}
	if tf.Until, err = bodyTime("filter.until", f.Until, now); err != nil {
		return nil, err
	}
	return tf, nil
}

// bodyTime reads a time a JSON body gives as text: RFC 3339, a date, or an age like 6h (that
// long before now), as a replay plan's filter does; "" is none (the zero time). A bad one names
// field: decoded as a time.Time, it was "body: could not be read as JSON".
func bodyTime(field, raw string, now time.Time) (time.Time, error) {
	if raw == "" {
		return time.Time{}, nil
	}
	t, ok := boundedTime(strings.TrimSpace(raw), now)
	if !ok {
		return time.Time{}, ops.Invalid(field, "must be RFC 3339 (2026-11-30T06:00:00Z) or a date (2026-11-30) between 1970 and 9999, or an age like 6h")
	}
	return t, nil
}

// APIResolve: POST /api/v1/kafka/:cluster/topics/:topic/resolutions — {"records":[{partition,
// offset}] | "error_group":{"exception_type"} | "filter":{…}, "state", "reason"} → {"updated": n}.
func (h *Kafka) APIResolve(c echo.Context) error {
	return answerJSON(c, h.resolve, func(res triage.Result) resolvedJSON {
		return resolvedJSON{Updated: res.Updated, Matched: res.Matched, Scanned: &res.Scanned}
	})
}

// FormResolve: POST /kafka/:cluster/topics/:topic/resolutions — the pages' resolve buttons: a
// record (partition, offset) or an error group (exception_type), back to where it was pressed.
func (h *Kafka) FormResolve(c echo.Context) error {
	req := resolutionRequest{State: c.FormValue("state"), Reason: c.FormValue("reason")}
	if p, o := c.FormValue("partition"), c.FormValue("offset"); p != "" || o != "" {
		ref, err := formRecord(p, o)
		if err != nil {
			return err
		}
		req.Records = []recordRefJSON{ref}
	}
	if c.Request().Form.Has("exception_type") {
		req.ErrorGroup = &errorGroupRefJSON{ExceptionType: c.FormValue("exception_type")}
		if c.Request().Form.Has("exception_cause") {
			cause := c.FormValue("exception_cause")
			req.ErrorGroup.ExceptionCause = &cause
		}
	}
	res, err := h.resolve(c, req)
	if err != nil {
		return err
	}
	return h.backToTopic(c, ops.Plural(int64(res.Updated), "record")+" marked "+req.State+".")
}

func (h *Kafka) resolve(c echo.Context, req resolutionRequest) (triage.Result, error) {
	k, err := h.cluster(c)
	if err != nil {
		return triage.Result{}, err
	}
	if h.triage == nil {
		return triage.Result{}, &ops.Error{Kind: ops.ErrUnavailable, Message: "resolutions need the console's store"}
	}
	topic := pathParam(c, "topic")
	reason, err := resolutionInput(req.State, req.Reason, "records")
	if err != nil {
		return triage.Result{}, err
	}
	r := triage.Request{Cluster: k.Name(), Topic: topic, State: req.State, Reason: reason,
		Actor: ActorOf(c)}
	for i, ref := range req.Records {
		if ref.Partition == nil || ref.Offset == nil {
			return triage.Result{}, ops.Invalid(fmt.Sprintf("records[%d]", i), "needs partition and offset")
		}
		if *ref.Partition < 0 || *ref.Offset < 0 {
			return triage.Result{}, ops.Invalid(fmt.Sprintf("records[%d]", i), "partition and offset must not be negative")
		}
		r.Selection.Records = append(r.Selection.Records, triage.RecordKey{Partition: *ref.Partition, Offset: *ref.Offset})
	}
	if req.Records != nil && len(req.Records) == 0 {
		return triage.Result{}, ops.Invalid("records", "empty: name at least one record")
	}
	if g := req.ErrorGroup; g != nil {
		ref := &triage.ErrorGroupRef{ExceptionType: g.ExceptionType, ExceptionCause: g.ExceptionCause}
		if p, o, ok := redact.GroupRef(g.ExceptionType); ok { // a masked group, as its page names it
			ref.Of = &triage.RecordKey{Partition: p, Offset: o}
		} else {
			// Compared with the type the actor sees: resolving cannot confirm a guess of a masked one.
			red, err := redactionFor(c, h.redact, "kafka/"+k.Name()+"/"+topic)
			if err != nil {
				return triage.Result{}, err
			}
			if red != nil {
				ref.Shown = red.GroupKey
			}
		}
		r.Selection.ErrorGroup = ref
	}
	if f := req.Filter; f != nil {
		red, err := redactionFor(c, h.redact, "kafka/"+k.Name()+"/"+topic)
		if err != nil {
			return triage.Result{}, err
		}
		tf, err := f.filter(time.Now())
		if err != nil {
			return triage.Result{}, err
		}
		if red != nil {
			tf.View = func(rec kafkamodel.Record) kafkamodel.Record { v, _ := red.Record(rec); return v }
		}
		r.Selection.Filter = tf
	}
	return h.triage.Resolve(clientContext(c), r)
}

// resolutionInput checks what a person asks a resolution for: a state, and a reason unless the
// dead letters are opened again (what names them for the message: records, events). It returns the
// reason as the audit log keeps it (reasonText).
func resolutionInput(state, reason, what string) (string, error) {
	switch {
	case state == "":
		return "", ops.Invalid("state", "required: open, resolved or ignored")
	case state == triage.StateOpen:
		return reasonText(reason)
	}
	return requiredReason(reason, "say why (it goes to the audit log and shows beside the "+what+")")
}

// recordState reads ?state= of a records page or API (def when absent).
func recordState(c echo.Context, def string) (string, error) {
	return triage.ParseState(c.QueryParam("state"), def)
}

// toResolutionView is a record's resolution for the pages.
func toResolutionView(r triage.Resolution) kafkapages.ResolutionView {
	return kafkapages.ResolutionView{State: r.State, By: r.Actor, At: r.At, Reason: r.Reason, JobID: r.JobID}
}

// errorGroups scans a topic's error groups and counts each one's open records.
func (h *Kafka) errorGroups(ctx context.Context, k KafkaCluster, topic string, maxScan int) (kafkamodel.ErrorScan, error) {
	scan, err := k.ErrorGroups(ctx, topic, maxScan)
	if err != nil || h.triage == nil {
		return scan, err
	}
	if withOpen, err := h.triage.OpenByErrorGroup(ctx, k.Name(), scan); err == nil {
		return withOpen, nil
	}
	return scan, nil // the store cannot say: every record counts as open
}

// openCounts fills the dead-letter topics' settled counts; when the store cannot say, every
// record counts as open (too many on fire rather than too few).
func (h *Kafka) openCounts(ctx context.Context, cluster string, topics []kafkamodel.DLTopic) []kafkamodel.DLTopic {
	if h.triage == nil {
		return topics
	}
	out, _ := h.triage.OpenCounts(ctx, cluster, topics)
	return out
}

// noteJSON is a note as the API gives it: on an error group or a record (the other null).
type noteJSON struct {
	ID         int64              `json:"id"`
	ErrorGroup *errorGroupRefJSON `json:"error_group"`
	Record     *recordKeyJSON     `json:"record"`
	By         string             `json:"by"`
	At         time.Time          `json:"at"`
	Text       string             `json:"text"`
	Link       string             `json:"link"`
}

type recordKeyJSON struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

func toNoteJSON(n triage.Note) noteJSON {
	j := noteJSON{ID: n.ID, By: n.Actor, At: n.At.UTC(), Text: n.Text, Link: n.Link}
	if r := n.Record; r != nil {
		j.Record = &recordKeyJSON{Partition: r.Partition, Offset: r.Offset}
	}
	if g := n.Group; g != nil {
		cause := g.Cause
		j.ErrorGroup = &errorGroupRefJSON{ExceptionType: g.Type, ExceptionCause: &cause}
	}
	return j
}

// noteRequest is the body of POST …/topics/:topic/notes.
type noteRequest struct {
	ErrorGroup *errorGroupRefJSON `json:"error_group"`
	Record     *recordRefJSON     `json:"record"`
	Text       string             `json:"text"`
	Link       string             `json:"link"`
}

// APINote: POST /api/v1/kafka/:cluster/topics/:topic/notes — {"error_group":{"exception_type",
// "exception_cause"} | "record":{"partition","offset"}, "text", "link"} → the note.
func (h *Kafka) APINote(c echo.Context) error {
	return answerJSON(c, h.addNote, toNoteJSON)
}

// APINotes: GET /api/v1/kafka/:cluster/topics/:topic/notes — every note of the topic, oldest first.
func (h *Kafka) APINotes(c echo.Context) error {
	k, err := h.cluster(c)
	if err != nil {
		return err
	}
	return answerNotes(c, h.triage != nil, func(ctx context.Context) ([]triage.Note, error) {
		return h.triage.Notes(ctx, k.Name(), pathParam(c, "topic"))
	}, toNoteJSON)
}

// answerNotes answers a notes API (a topic's, a queue's): {"notes": [...]} as read and shaped as
// the area gives a note; an empty list when the console has no store to keep notes in (stored
// false: read is not called).
func answerNotes[J any](c echo.Context, stored bool, read func(context.Context) ([]triage.Note, error), toJSON func(triage.Note) J) error {
	out := struct {
		Notes []J `json:"notes"`
	}{Notes: []J{}}
	if !stored {
		return c.JSON(http.StatusOK, out)
	}
	notes, err := read(c.Request().Context())
	if err != nil {
		return err
	}
	for _, n := range notes {
		out.Notes = append(out.Notes, toJSON(n))
	}
	return c.JSON(http.StatusOK, out)
}

// errNoNoteStore answers adding a note when the console has no store to keep it in.
var errNoNoteStore = &ops.Error{Kind: ops.ErrUnavailable, Message: "notes need the console's store"}

// FormNote: POST /kafka/:cluster/topics/:topic/notes — the pages' note forms, back to the page.
func (h *Kafka) FormNote(c echo.Context) error {
	req := noteRequest{Text: c.FormValue("text"), Link: c.FormValue("link")}
	if c.Request().Form.Has("exception_type") {
		cause := c.FormValue("exception_cause")
		req.ErrorGroup = &errorGroupRefJSON{ExceptionType: c.FormValue("exception_type"), ExceptionCause: &cause}
	}
	if p, o := c.FormValue("partition"), c.FormValue("offset"); p != "" || o != "" {
		ref, err := formRecord(p, o)
		if err != nil {
			return err
		}
		req.Record = &ref
	}
	if _, err := h.addNote(c, req); err != nil {
		return err
	}
	return h.backToTopic(c, "Note added.")
}

func (h *Kafka) addNote(c echo.Context, req noteRequest) (triage.Note, error) {
	k, err := h.cluster(c)
	if err != nil {
		return triage.Note{}, err
	}
	if h.triage == nil {
		return triage.Note{}, errNoNoteStore
	}
	r := triage.NoteRequest{Cluster: k.Name(), Topic: pathParam(c, "topic"), Text: req.Text, Link: req.Link,
		Actor: ActorOf(c)}
	if g := req.ErrorGroup; g != nil {
		r.Group = &triage.GroupKey{Type: g.ExceptionType}
		if g.ExceptionCause != nil {
			r.Group.Cause = *g.ExceptionCause
		}
	}
	if rec := req.Record; rec != nil {
		if rec.Partition == nil || rec.Offset == nil {
			return triage.Note{}, ops.Invalid("record", "needs partition and offset")
		}
		r.Record = &triage.RecordKey{Partition: *rec.Partition, Offset: *rec.Offset}
	}
	return h.triage.AddNote(clientContext(c), r)
}

// clientContext is the request's context carrying where it came from, for the audit.
func clientContext(c echo.Context) context.Context {
	ip, ua := clientInfo(c)
	return ops.WithClient(c.Request().Context(), ops.Client{Addr: ip, UserAgent: ua})
}

// formRecord reads a form's partition and offset.
func formRecord(p, o string) (recordRefJSON, error) {
	pn, perr := strconv.ParseInt(p, 10, 32)
	on, oerr := strconv.ParseInt(o, 10, 64)
	if perr != nil || oerr != nil {
		return recordRefJSON{}, ops.Invalid("record", "partition and offset must be numbers")
	}
	p32 := int32(pn)
	return recordRefJSON{Partition: &p32, Offset: &on}, nil
}

// backToTopic answers a form of a topic's pages: back to the page it was on (the form's back,
// when it is one of this topic's pages: never elsewhere, an open redirect) with flash.
func (h *Kafka) backToTopic(c echo.Context, flash string) error {
	topicPage := paths.KafkaTopic(pathParam(c, "cluster"), pathParam(c, "topic"))
	back, ok := below(c.FormValue("back"), topicPage)
	if !ok {
		back = &url.URL{Path: topicPage}
	}
	q := back.Query()
	q.Del("flash") // a flash is the redirect's cookie (setFlash), never the URL's
	setFlash(c, flash)
	return c.Redirect(http.StatusSeeOther, paths.WithQuery(back.EscapedPath(), q))
}

// notesByTarget sorts a topic's notes by what they are on.
func notesByTarget(notes []triage.Note) (map[triage.GroupKey][]kafkapages.NoteView, map[triage.RecordKey][]kafkapages.NoteView) {
	groups, records := map[triage.GroupKey][]kafkapages.NoteView{}, map[triage.RecordKey][]kafkapages.NoteView{}
	for _, n := range notes {
		v := kafkapages.NoteView{By: n.Actor, At: n.At, Text: n.Text, Link: n.Link}
		if n.Group != nil {
			groups[*n.Group] = append(groups[*n.Group], v)
		}
		if n.Record != nil {
			records[*n.Record] = append(records[*n.Record], v)
		}
	}
	return groups, records
}

// topicNotes reads a topic's notes for its pages: none (and no error) when the store cannot say,
// so that a page still shows its records.
func (h *Kafka) topicNotes(ctx context.Context, cluster, topic string) []triage.Note {
	if h.triage == nil {
		return nil
	}
	notes, _ := h.triage.Notes(ctx, cluster, topic)
	return notes
}

// resolvedJSON answers a resolution request: how many records (or outbox events) changed state,
// how many were selected, and for a Kafka selection how many records were read to find them.
type resolvedJSON struct {
	Updated int64  `json:"updated"`
	Matched int64  `json:"matched"`
	Scanned *int64 `json:"scanned,omitempty"`
}
