package outbox

import (
	"context"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/catalog"
)

// NewRegistry is the outbox named s.Name over a registry-format table (f is not the seed): the
// overview, the records and their payloads, and no repair — every repair, and every use of the
// seed's numeric event ids (replay, trace, resolutions), is refused saying what does the work
// instead (f.ReadOnlyWhy). It closes r on Close.
func NewRegistry(s Settings, f Format, r Registry) *Outbox {
	o := New(s, readOnly{name: s.Name, format: f, reg: r})
	o.format, o.registry = f, r
	return o
}

// Format is the table's layout.
func (o *Outbox) Format() Format {
	if o.registry == nil {
		return FormatSeed
	}
	return o.format
}

// Records lists a registry's records (checked: a state of its format, Limit 1..MaxLimit+1 —
// DefaultLimit when 0), newest first, without payloads. On a seed outbox it is refused.
func (o *Outbox) Records(ctx context.Context, f RecordFilter) ([]Record, error) {
	if o.registry == nil {
		return nil, ops.Invalid("outbox", "outbox "+o.name+" is a seed outbox: its events are listed by id")
	}
	if f.Limit == 0 {
		f.Limit = DefaultLimit
	}
	if f.Limit < 1 || f.Limit > MaxLimit+1 {
		return nil, ops.Invalid("limit", "must be 1..500")
	}
	if f.State != "" {
		if _, err := o.format.ParseState(string(f.State)); err != nil {
			return nil, err
		}
	}
	for _, t := range []string{f.Type, f.Key} {
		if p := ops.TextProblem(t); p != "" {
			return nil, nil // text the column cannot hold names no row
		}
	}
	return o.registry.Records(ctx, f)
}

// Record reads one of a registry's records with its payload; ops.ErrNotFound when there is none.
func (o *Outbox) Record(ctx context.Context, id string) (Record, error) {
	if o.registry == nil {
		return Record{}, ops.Invalid("outbox", "outbox "+o.name+" is a seed outbox: its events are read by id")
	}
	if id == "" || len(id) > 255 || ops.TextProblem(id) != "" {
		return Record{}, ops.NotFound("record %q not found in outbox %q", ops.Echo(id), o.name)
	}
	return o.registry.Record(ctx, id)
}

// registryStats is Stats of a registry: the format's counts, the oldest incomplete row's age
// (OldestIncompleteAge), no leases, no READY backlog.
func (o *Outbox) registryStats(ctx context.Context) (Stats, error) {
	rs, err := o.registry.Stats(ctx)
	if err != nil {
		return Stats{}, err
	}
	f := o.format
	st := Stats{Counts: map[Status]int64{}, CheckedAt: time.Now(), Records: &rs, Format: &f}
	for _, s := range o.format.States {
		st.Counts[s] = rs.Counts[s]
	}
	for _, s := range o.format.Attention {
		st.Attention += rs.Counts[s]
	}
	return st, nil
}

// readOnly is the Store of a registry outbox: what the seed's repairs and numeric ids need is
// refused in the format's words; the trace's and the overview's look-ups find nothing.
type readOnly struct {
	name   string
	format Format
	reg    Registry
}

func (r readOnly) refuse(doing string) error {
	return ops.Conflict("outbox %q is a %s: the console does not %s. %s", r.name, r.format.Title, doing, r.format.ReadOnlyWhy)
}

func (r readOnly) Ping(ctx context.Context) error { return r.reg.Ping(ctx) }
func (r readOnly) Close()                         { r.reg.Close() }
func (r readOnly) Stats(context.Context) (Stats, error) {
	return Stats{}, r.refuse("count seed states")
}
func (r readOnly) List(context.Context, Filter) ([]Event, error) {
	return nil, r.refuse("list seed events (its records are listed on its page and at /api/v1/outboxes/" + r.name + "/events)")
}
func (r readOnly) Events(context.Context, []int64) ([]Event, error) {
	return nil, r.refuse("replay its rows")
}
func (r readOnly) Event(context.Context, int64) (Event, error) {
	return Event{}, r.refuse("read seed events by number")
}
func (r readOnly) Find(context.Context, []string, string, int) ([]Event, error) { return nil, nil }
func (r readOnly) ReleaseStuck(context.Context, []int64, AuditFunc) (int64, error) {
	return 0, r.refuse("release leases")
}
func (r readOnly) Requeue(context.Context, []int64, []string, bool, AuditFunc) ([]int64, error) {
	return nil, r.refuse("requeue")
}
func (r readOnly) Deaths(context.Context, []int64) (map[int64]string, error) { return nil, nil }
func (r readOnly) Inspect(ctx context.Context) (catalog.TableFacts, error)   { return r.reg.Inspect(ctx) }
