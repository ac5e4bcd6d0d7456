package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// Scan defaults and bounds.
const (
	// DefaultMaxScan is how many records a scan reads when the caller does not say.
	DefaultMaxScan = 100_000
	// DefaultTimeout is how long a scan reads when search.timeout is not configured.
	DefaultTimeout = 10 * time.Second
)

// Why a scan stopped.
const (
	StoppedLimit   = "limit"    // Limit matches were found
	StoppedMaxScan = "max_scan" // MaxScan records were read
	StoppedTimeout = "timeout"  // the scan's time ran out
	StoppedEnd     = "end"      // the whole range was read (Exhausted)
)

// KafkaSource is what a scan needs of a cluster; *kafka.Cluster implements it.
type KafkaSource interface {
	// Partitions lists the topic's partitions and offsets: ErrNotFound, ErrUnavailable.
	Partitions(ctx context.Context, topic string) ([]kafkamodel.PartitionRange, error)
	// NewScanner reads the topic's partitions; the caller closes it.
	NewScanner(topic string) kafkamodel.Scanner
}

// Query is one scan of a topic.
type Query struct {
	Topic string // required
	// Filter selects the records; nil keeps every record (an export without a filter).
	Filter *Filter
	// Partition is the one partition to read; nil reads every partition, one after the other in
	// ascending order.
	Partition *int32
	Order     string // "newest" (default: descending offsets) or "oldest"
	// FromOffset and ToOffset (inclusive) bound every partition's range; nil: its start, its end.
	FromOffset, ToOffset *int64
	// Cursor is where each partition goes on, as a previous scan's Next: the offset of the next
	// record to read in Order, for every partition the scan began with (one read already is past
	// its end). A partition it does not name was added since, and is read whole.
	Cursor map[int32]int64
	// Limit stops the scan at this many matches; 0 does not.
	Limit int
	// MaxScan stops it after this many records read; 0 does not.
	MaxScan int64
	// Timeout stops it after this long; 0 does not (ctx still does).
	Timeout time.Duration
	// View, when set, is what the reader may see of a record (content masked): the filter
	// evaluates it, and it is what a match hands on. It is called at most once a record: only
	// when the filter reads headers, value or dead_letter, and on a match just before Each. It
	// must keep the key, partition, offset, timestamp and size as they are, for a filter over
	// those reads them from the record as fetched, before the view. The record it is given
	// shares the fetch's buffers: it must not keep it (a match is copied after the view).
	View func(kafkamodel.Record) kafkamodel.Record
	// Each, when set, is handed every match as it is found, in place of collecting them in
	// Result.Matches; an error from it ends the scan with that error.
	Each func(kafkamodel.Record) error
	// Progress, when set, is called every so often with the records read and matched so far.
	Progress func(scanned, matched int64)
}

// Result is what a scan found and how far it went.
type Result struct {
	Matches          []kafkamodel.Record // in the order found, unless Query.Each took them
	Scanned, Matched int64
	// EvalErrors counts records on which the expression failed (a missing key, a type mismatch):
	// they do not match; EvalError is the first such error, for the person to fix the filter.
	EvalErrors int64
	EvalError  string
	Stopped    string // StoppedLimit, StoppedMaxScan, StoppedTimeout or StoppedEnd
	// Next is the Cursor that goes on where the scan stopped; nil when Exhausted.
	Next       map[int32]int64
	Exhausted  bool
	Partitions []kafkamodel.PartitionRange // every partition of the topic, with its offsets when read
}

// span is one partition's range to read, [lo, hi), and where the scan is in it.
type span struct {
	p      int32
	lo, hi int64
	pos    int64 // oldest: the next offset to read; newest: the next offset to read going back
}

func (s span) done(order string) bool {
	if order == "oldest" {
		return s.pos >= s.hi
	}
	return s.pos < s.lo
}

// ScanKafka reads the selected partitions in order and evaluates the filter on each record until
// the range is read or a limit stops it, and says which (Result.Stopped) and where to go on
// (Result.Next). Each record is read once: a scan continued by its Next cursor neither misses
// nor repeats one. Errors: ErrInvalid (order, partition, the cost limit, a record deleted under
// the read), ErrNotFound (unknown topic), ErrUnavailable, the error of Each.
func ScanKafka(ctx context.Context, src KafkaSource, q Query) (Result, error) {
	switch q.Order {
	case "":
		q.Order = "newest"
	case "newest", "oldest":
	default:
		return Result{}, ops.Invalid("order", `must be "newest" or "oldest"`)
	}
	parts, err := src.Partitions(ctx, q.Topic)
	if err != nil {
		return Result{}, err
	}
	res := Result{Partitions: parts, Matches: []kafkamodel.Record{}}
	if q.Partition != nil && !slices.ContainsFunc(parts, func(p kafkamodel.PartitionRange) bool { return p.Partition == *q.Partition }) {
		return Result{}, ops.Invalid("partition", fmt.Sprintf("must be in [0, %d) for topic %s", len(parts), q.Topic))
	}
	var spans []span
	for _, pr := range parts {
		if q.Partition != nil && pr.Partition != *q.Partition {
			continue
		}
		// Up to the last stable offset: a scan reads what a read_committed consumer gets.
		s := span{p: pr.Partition, lo: pr.Start, hi: pr.Stable}
		if q.FromOffset != nil {
			s.lo = max(s.lo, *q.FromOffset)
		}
		if q.ToOffset != nil && *q.ToOffset < s.hi {
			s.hi = max(*q.ToOffset+1, s.lo) // inclusive; compared first so that MaxInt64 cannot overflow
		}
		s.pos = s.lo
		if q.Order == "newest" {
			s.pos = s.hi - 1
		}
		// A cursor names every partition the scan began with, read or not: one it does not name
		// was added since, and is read whole (it used to be taken for read, and the scan said
		// "whole range read" over its records).
		if c, ok := q.Cursor[pr.Partition]; ok {
			if q.Order == "oldest" {
				s.pos = max(c, s.lo)
			} else {
				s.pos = min(c, s.hi-1)
			}
		}
		spans = append(spans, s)
	}

	readCtx, deadline, cancel := scanDeadline(ctx, q.Timeout)
	defer cancel()
	sc := src.NewScanner(q.Topic)
	defer sc.Close()

	var stopErr error
	// One activation for the scan, pointed at each record in turn. The filter reads only what it
	// needs of a record; a match is decoded and viewed (if the filter has not already needed
	// that) just before it is handed on.
	vars := &kafkaVars{view: q.View}
	if q.Filter != nil {
		vars.paths = q.Filter.paths
	}
	screens, whole := screensOf(q.Filter, q.View != nil)
	visit := func(l kafkamodel.LazyRecord) bool {
		res.Scanned++
		plain := l.Plain() // once a record: the screens and vars read it without a call each
		ok := false
		verdict := undecided
		if len(screens) > 0 {
			verdict = screenRecord(screens, l, plain)
		}
		switch {
		case verdict == screenedOut:
		case verdict == screenedIn && whole:
			vars.reset(l, plain) // a match: handed on from the record vars reads
			ok = true
		default:
			vars.reset(l, plain)
			var err error
			ok, err = q.Filter.judge(readCtx, vars, &res.EvalErrors, &res.EvalError, func() string {
				return fmt.Sprintf("partition %d offset %d", plain.Partition, plain.Offset)
			})
			if err != nil {
				stopErr = err
				return false
			}
		}
		// A match is cloned: the fetch's buffers are lent to the next fetch.
		if ok {
			if more, err := keep(vars.record().Clone(), q.Each, &res.Matches, &res.Matched, q.Limit, &res.Stopped); !more {
				stopErr = err // nil at the limit
				return false
			}
		}
		if q.MaxScan > 0 && res.Scanned >= q.MaxScan {
			res.Stopped = StoppedMaxScan
			return false
		}
		if !checkpoint(q.Progress, res.Scanned, res.Matched, deadline, &res.Stopped) {
			return false
		}
		if res.Scanned%checkEvery == 0 {
			// A bounded filter is not interrupted by ctx (Filter.bounded), and records already
			// fetched are read without the client: the scan is, here.
			if err := ctx.Err(); err != nil {
				stopErr = fmt.Errorf("scan %s: %w", q.Topic, err)
				return false
			}
		}
		return true
	}

	for i := range spans {
		s := &spans[i]
		if res.Stopped != "" {
			break
		}
		if s.done(q.Order) {
			continue
		}
		var err error
		if q.Order == "oldest" {
			s.pos, err = sc.ForwardLazy(readCtx, s.p, s.pos, s.hi, visit)
		} else {
			s.pos, err = sc.BackwardLazy(readCtx, s.p, s.lo, s.pos+1, visit)
		}
		if stopErr != nil {
			return Result{}, stopErr
		}
		if err != nil {
			if !deadline.IsZero() && time.Now().After(deadline) && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				res.Stopped = StoppedTimeout
				break
			}
			return Result{}, err
		}
		if res.Stopped == "" {
			// A read that returns with nothing stopping it has read its range, whatever offset
			// it says (the range may end in offsets no committed record holds): a cursor here
			// would repeat the same empty read.
			s.pos = s.hi
			if q.Order != "oldest" {
				s.pos = s.lo - 1
			}
		}
	}
	if q.Progress != nil {
		q.Progress(res.Scanned, res.Matched)
	}
	if slices.ContainsFunc(spans, func(s span) bool { return !s.done(q.Order) }) {
		res.Next = make(map[int32]int64, len(spans))
		for _, s := range spans {
			res.Next[s.p] = s.pos
		}
	}
	if res.Next == nil {
		res.Exhausted, res.Stopped = true, StoppedEnd
	} else if res.Stopped == "" {
		res.Stopped = StoppedTimeout
	}
	return res, nil
}

// readGrace is how much longer than its scan a scan's reads may go on: a read under way when the
// scan's time runs out then returns what it took (a fetch its records, a browse its messages)
// rather than an error, and a wait (a browse's turn on the queue, a silent broker) ends.
const readGrace = 2 * time.Second

// scanDeadline is when a scan of timeout stops reading (zero for no timeout: ctx alone ends it)
// and the context of its reads, which ends readGrace later; cancel releases that context.
func scanDeadline(ctx context.Context, timeout time.Duration) (readCtx context.Context, deadline time.Time, cancel context.CancelFunc) {
	if timeout <= 0 {
		return ctx, time.Time{}, func() {}
	}
	deadline = time.Now().Add(timeout)
	readCtx, cancel = context.WithDeadline(ctx, deadline.Add(readGrace))
	return readCtx, deadline, cancel
}

// checkEvery is how many messages a scan reads between two reports of its progress.
const checkEvery = 256

// checkpoint is what both scans (a topic's records, a queue's messages) do after each message
// read: stop at the deadline (StoppedTimeout), looked at after every message — a filter that takes
// a millisecond a message ran 256 of them, a quarter of a second, past it when the time was only
// looked at with the progress —, and every checkEvery messages report the progress, so that the two
// report and time out alike. It says whether the scan goes on.
func checkpoint(progress func(scanned, matched int64), scanned, matched int64, deadline time.Time, stopped *string) bool {
	if !deadline.IsZero() && time.Now().After(deadline) {
		if progress != nil {
			progress(scanned, matched)
		}
		*stopped = StoppedTimeout
		return false
	}
	if progress != nil && scanned%checkEvery == 0 {
		progress(scanned, matched)
	}
	return true
}

// screening says whether scans screen records (screensOf); a test turns it off to compare.
var screening = true

// screen is one conjunct of a filter's top-level && that a scan decides from the fetched record's
// bytes, before CEL: the key, a header (the last of its key) or a dead-letter text field compared
// with a constant (==, !=, startsWith, endsWith, contains). Where the conjunct is false, the whole
// && is false, whatever the other conjuncts give (CEL's && is false when any side is, even beside
// an error), so the record is no match and the evaluation is skipped; anywhere else — the conjunct
// true, the header missing (an error in CEL), bytes that are not UTF-8 (text in base64) — CEL
// decides as before. A key filter then evaluates nothing on a record whose key differs, and the
// header / dead-letter filter of issue 38 evaluates the one record in seven of tenant 3.
type screen struct {
	of   string // "key", "headers" or "dead_letter"
	name string // the header or dead-letter field
	op   string // "==", "!=", "startsWith", "endsWith", "contains"
	arg  string
}

// screenParser parses filters for their screens; checking them was done by Compile.
var screenParser = sync.OnceValues(func() (*cel.Env, error) { return cel.NewEnv() })

// screensOf is the conjuncts of f's top-level && that a scan can screen records with; none when f
// is not a Kafka filter, is kept to a resolution state (whose look-up failures count as errors
// before the expression runs) or screening is off. Under a view only the key, which a view keeps,
// is screened.
// whole is true when the expression is nothing but the screens' conjunction: a record on which
// every screen holds (each read, none left to CEL) matches without evaluating anything.
func screensOf(f *Filter, viewed bool) (screens []screen, whole bool) {
	if !screening || f == nil || f.kind != Kafka || f.state != "" {
		return nil, false
	}
	env, err := screenParser()
	if err != nil {
		return nil, false
	}
	a, iss := env.Parse(f.text)
	if iss.Err() != nil {
		return nil, false
	}
	var out []screen
	whole = true
	var walk func(e celast.Expr)
	walk = func(e celast.Expr) {
		screened := false
		defer func() { whole = whole && screened }()
		if e.Kind() != celast.CallKind {
			return
		}
		c := e.AsCall()
		if c.FunctionName() == operators.LogicalAnd && len(c.Args()) == 2 {
			walk(c.Args()[0])
			walk(c.Args()[1])
			screened = true // as whole as its two sides
			return
		}
		var operand, lit celast.Expr
		op := ""
		switch fn := c.FunctionName(); {
		case (fn == operators.Equals || fn == operators.NotEquals) && len(c.Args()) == 2:
			op = map[string]string{operators.Equals: "==", operators.NotEquals: "!="}[fn]
			operand, lit = c.Args()[0], c.Args()[1]
			if operand.Kind() == celast.LiteralKind {
				operand, lit = lit, operand
			}
		case (fn == "startsWith" || fn == "endsWith" || fn == "contains") && c.IsMemberFunction() && len(c.Args()) == 1:
			op, operand, lit = fn, c.Target(), c.Args()[0]
		default:
			return
		}
		if lit.Kind() != celast.LiteralKind {
			return
		}
		arg, ok := lit.AsLiteral().(types.String)
		if !ok {
			return
		}
		s := screen{op: op, arg: string(arg)}
		switch {
		case operand.Kind() == celast.IdentKind && operand.AsIdent() == "key":
			s.of = "key"
		case viewed:
			return
		case operand.Kind() == celast.SelectKind && !operand.AsSelect().IsTestOnly():
			sel := operand.AsSelect()
			if sel.Operand().Kind() != celast.IdentKind {
				return
			}
			s.of, s.name = sel.Operand().AsIdent(), sel.FieldName()
		case operand.Kind() == celast.CallKind && operand.AsCall().FunctionName() == operators.Index && len(operand.AsCall().Args()) == 2:
			m, k := operand.AsCall().Args()[0], operand.AsCall().Args()[1]
			key, ok := literalString(k)
			if !ok || m.Kind() != celast.IdentKind {
				return
			}
			s.of, s.name = m.AsIdent(), key
		default:
			return
		}
		if s.of != "key" && s.of != "headers" && s.of != "dead_letter" {
			return
		}
		out = append(out, s)
		screened = true
	}
	walk(a.NativeRep().Expr())
	return out, whole && len(out) > 0
}

func literalString(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// Screening verdicts: a screen is false (no match), every screen held (read, none left to CEL),
// or CEL decides.
const (
	screenedOut = iota
	screenedIn
	undecided
)

// screenRecord is the screens' verdict on a record (plain is l.Plain()): screenedOut as soon as
// one is false.
func screenRecord(screens []screen, l kafkamodel.LazyRecord, plain *kafkamodel.Record) int {
	verdict := screenedIn
	for _, s := range screens {
		var b []byte
		switch s.of {
		case "key":
			b = plain.Key
		case "headers":
			found := false
			for i := len(plain.Headers) - 1; i >= 0; i-- {
				if h := plain.Headers[i]; h.Key == s.name {
					b, found = h.Value, true
					break
				}
			}
			if !found {
				verdict = undecided // an error in CEL: it decides
				continue
			}
		case "dead_letter":
			var ok bool
			if b, ok = l.DeadLetterText(s.name); !ok {
				verdict = undecided
				continue
			}
		}
		if !utf8.Valid(b) {
			verdict = undecided // base64 in CEL: it decides
			continue
		}
		var holds bool
		switch s.op {
		case "==":
			holds = string(b) == s.arg
		case "!=":
			holds = string(b) != s.arg
		case "startsWith":
			holds = bytes.HasPrefix(b, []byte(s.arg))
		case "endsWith":
			holds = bytes.HasSuffix(b, []byte(s.arg))
		case "contains":
			holds = bytes.Contains(b, []byte(s.arg))
		}
		if !holds {
			return screenedOut
		}
	}
	return verdict
}
