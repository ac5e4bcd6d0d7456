// Package audit is how a use case writes the audit log, with one policy for every change:
//
//   - the intent before the effect: when it cannot be written, the change is not attempted and the
//     caller is told so (ops.ErrUnavailable, "the audit log cannot be written, so nothing was
//     changed");
//   - the outcome after the effect, naming the intent (detail.intent_id): ok, or failed with the
//     change's error. A change that was made stays made and is reported as made: when its outcome
//     cannot be written, that failure is logged and counted (redrive_audit_write_failures_total),
//     never turned into an error of the request; the intent row says the change was attempted.
//
// Entries that are not a change's (a refusal, a job's end) follow the outcome's rule. An outbox
// repair goes further when it can: its outcome row is written in the repair's own transaction, so
// that the repair commits only with it (ChangeInTx, over the store's RecordAuditIn); a repair whose
// outcome cannot be written is rolled back, which the rule allows: nothing was applied.
package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/ops"
)

// Recorder appends rows to the audit log; *store.Store implements it.
type Recorder interface {
	RecordAudit(ctx context.Context, e Entry) error
}

// Log is the audit log with intents; *store.Store implements it.
type Log interface {
	Recorder
	RecordIntent(ctx context.Context, e Entry) (int64, error)
}

// writeTimeout bounds one audit write; writes outlive the request that caused them (a client that
// went away does not leave a change unrecorded).
const writeTimeout = 5 * time.Second

var failures = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "redrive_audit_write_failures_total",
	Help: "Audit rows (outcomes, refusals) that could not be written after what they record, by action; " +
		"what they record stands, and the console's log has the error.",
}, []string{"action"})

// Collector is the failure counter, for the console's registry.
func Collector() prometheus.Collector { return failures }

// Writer writes a use case's audit rows with the package's policy. A nil Log writes nothing (tests).
type Writer struct {
	log    Log
	logger *slog.Logger
}

// New returns a Writer over log; logger (nil: slog.Default) is where failures go.
func New(log Log, logger *slog.Logger) *Writer {
	if logger == nil {
		logger = slog.Default()
	}
	return &Writer{log: log, logger: logger}
}

// Done writes the outcome of a change: ok when changeErr is nil, else failed with its text in
// detail.error. detail, when not nil, is the outcome's detail instead of the intent's (intent_id
// and error are added to it). It returns nothing, by the policy: see the package doc.
type Done func(changeErr error, detail map[string]any)

// Ending writes the outcome of what an intent announced when it is more than done or not: outcome
// is OutcomeOK, OutcomePartial or OutcomeFailed, n its count (nil: the intent's), cause's text
// goes in detail.error, and detail, when not nil, is added to the intent's. Like Done it returns
// nothing: a lost row is logged and counted.
type Ending func(outcome string, n *int64, cause error, detail map[string]any)

// Intend writes e as the intent of a change (outcome "started") before the change is made. An
// error means the change must not be made: an ops.ErrUnavailable that says so.
func (w *Writer) Intend(ctx context.Context, e Entry) (Done, error) {
	end, err := w.begin(ctx, e, "the audit log cannot be written, so nothing was changed (%s)")
	if err != nil {
		return nil, err
	}
	return func(changeErr error, detail map[string]any) {
		outcome := OutcomeOK
		if changeErr != nil {
			outcome = OutcomeFailed
		}
		end.replacing(outcome, e.Count, changeErr, detail)
	}, nil
}

// Begin writes e as the intent of something that may end partly done (an export streams until
// the client or the source stops it). An error means it must not start: an ops.ErrUnavailable
// that says so.
func (w *Writer) Begin(ctx context.Context, e Entry) (Ending, error) {
	end, err := w.begin(ctx, e, "the audit log cannot be written, so nothing was done (%s)")
	if err != nil {
		return nil, err
	}
	return func(outcome string, n *int64, cause error, detail map[string]any) {
		if n == nil {
			n = e.Count
		}
		merged := make(map[string]any, len(e.Detail)+len(detail))
		for k, v := range e.Detail {
			merged[k] = v
		}
		for k, v := range detail {
			merged[k] = v
		}
		end.replacing(outcome, n, cause, merged)
	}, nil
}

// ending is an intent row written: what its outcome row is made from.
type ending struct {
	w      *Writer
	ctx    context.Context
	e      Entry
	intent int64 // 0: no log, nothing is written
}

func (w *Writer) begin(ctx context.Context, e Entry, refusal string) (ending, error) {
	if w == nil || w.log == nil {
		return ending{}, nil
	}
	e = WithClient(ctx, e)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	id, err := w.log.RecordIntent(wctx, e)
	if err != nil {
		return ending{}, ops.Unavailable(err, refusal, e.Action)
	}
	return ending{w: w, ctx: ctx, e: e, intent: id}, nil
}

// replacing writes the outcome row with detail (nil: the intent's) in place of the intent's detail.
func (x ending) replacing(outcome string, n *int64, cause error, detail map[string]any) {
	if x.w == nil {
		return
	}
	if detail == nil {
		detail = x.e.Detail
	}
	out := OutcomeOf(Entry{}, x.intent, outcome, n, cause)
	base := x.e
	base.Outcome, base.Count = out.Outcome, out.Count
	for k, v := range detail {
		if _, own := out.Detail[k]; !own {
			out.Detail[k] = v
		}
	}
	base.Detail = out.Detail
	x.w.Record(x.ctx, base)
}

// Record writes an entry after what it records happened (an outcome, a refusal, a job's end).
// When it cannot be written, what it records stands: the failure is logged and counted.
func (w *Writer) Record(ctx context.Context, e Entry) {
	if w == nil || w.log == nil {
		return
	}
	Record(ctx, w.log, w.logger, e)
}

// Record is Writer.Record for a caller that only appends (rec may not write intents).
func Record(ctx context.Context, rec Recorder, logger *slog.Logger, e Entry) {
	if logger == nil {
		logger = slog.Default()
	}
	e = WithClient(ctx, e)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := rec.RecordAudit(wctx, e); err != nil {
		failures.WithLabelValues(e.Action).Inc()
		logger.Error("audit: the entry cannot be written; what it records stands", "action", e.Action,
			"target", e.Target, "actor", e.Actor, "outcome", e.Outcome, "err", err)
	}
}

// WithClient is e with where the request came from (ops.WithClient) filled in, when e does not say:
// for a store that writes an entry itself, beside the change it records.
func WithClient(ctx context.Context, e Entry) Entry {
	if c := ops.ClientOf(ctx); e.SourceIP == "" && e.UserAgent == "" {
		e.SourceIP, e.UserAgent = c.Addr, c.UserAgent
	}
	return e
}
