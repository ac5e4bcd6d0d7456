// Package search is Redrive's content search: filter expressions in CEL over dead letters
// (Kafka records and RabbitMQ messages), compiled once and evaluated with a cost limit, and the
// scan that reads a topic's partitions (or a queue's head) for the records a filter matches.
//
// CEL, not a scripting language: an expression cannot loop unboundedly, call out, or touch the
// console; the cost limit bounds what one evaluation may spend on one record.
package search

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/source"
)

// Kind is what a filter evaluates over (its variables depend on it): a Kafka record or a
// RabbitMQ message, the source kinds of ops/source.
type Kind = source.Kind

// Kinds.
const (
	Kafka    = source.Kafka
	RabbitMQ = source.RabbitMQ
)

// Limits of an expression.
const (
	// MaxExpressionBytes bounds an expression's text.
	MaxExpressionBytes = 4 << 10
	// CostLimit bounds one evaluation (CEL's runtime cost units: about one per operation, a
	// string function a tenth per character). A filter over a 256 KiB value with a few
	// comparisons costs well under it; nested comprehensions over large lists do not.
	CostLimit = 1_000_000
)

// Variables lists each kind's variables with what they hold, for pages and documentation.
var Variables = map[Kind][]Variable{
	Kafka: {
		{"key", "string", "the key as text (base64 when it is not UTF-8; \"\" when null)"},
		{"value", "dyn", "the value decoded as JSON (a map for an object) when it is JSON, else the text"},
		{"headers", "map(string, string)", "the last value of each header, as text"},
		{"dead_letter", "map(string, dyn)", "original_topic, original_partition, original_offset, consumer_group, exception_type, exception_cause, exception_message, retry_count, message_id, trace_id, first_failed_at, convention (\"\" or 0 when absent)"},
		{"partition", "int", "the record's partition"},
		{"offset", "int", "the record's offset"},
		{"timestamp", "timestamp", "the record's timestamp"},
		{"size", "int", "bytes of key, value and headers"},
		{"resolution", "string", "the record's resolution state: open (never marked), resolved, ignored or replayed"},
	},
	RabbitMQ: {
		{"body", "dyn", "the body decoded as JSON when it is JSON, else the text"},
		{"headers", "map(string, string)", "every header, rendered as text"},
		{"properties", "map(string, dyn)", "message_id, correlation_id, timestamp, type, content_type, content_encoding, app_id, user_id, delivery_mode, priority, expiration, reply_to"},
		{"routing_key", "string", "the routing key it was delivered with"},
		{"exchange", "string", "the exchange it was published (or dead-lettered) to"},
		{"dead_letter", "map(string, dyn)", "reason, count, original_queue, original_exchange, original_routing_keys, first_death_at, exception_message, last_queue, first_reason, replay_count, message_id (\"\" or 0 when absent)"},
	},
}

// Variable is one variable of a filter.
type Variable struct {
	Name string
	Type string
	Doc  string
}

// Examples are filters to offer, per kind.
var Examples = map[Kind][]string{
	Kafka: {
		`key == "order-123"`,
		`value.orderId == 123`,
		`headers["tenant"] == "7" && dead_letter.exception_type.endsWith("TimeoutException")`,
		`dead_letter.exception_message.contains("timeout") && timestamp > timestamp("2026-11-30T10:00:00Z")`,
	},
	RabbitMQ: {
		`body.orderId == 123`,
		`dead_letter.reason == "rejected" && dead_letter.original_queue == "orders"`,
		`headers["tenant"] == "7"`,
		`properties.message_id.startsWith("ord-")`,
	},
}

// Filter is a compiled expression, safe for concurrent use.
type Filter struct {
	kind Kind
	text string
	prg  cel.Program // with the cost limit, interrupted by ctx
	// bounded, when set, is the same program without cost tracking or interrupts: the checker's
	// estimate bounds every evaluation below CostLimit whatever the sizes of the message (no
	// comprehension, no function whose cost grows with its input), so tracking could never stop
	// it. It spends about a third of prg's time on a short expression such as key == "x".
	bounded cel.Program
	// paths are the only parts of the message's JSON document (value, body) that the expression
	// can read; nil when it may read any part (see valuePaths).
	paths *pathTree
	// resolutions answers the resolution variable of a Kafka record (WithResolutions); nil:
	// every record is open.
	resolutions ResolutionOf
	// state, when set (InState), is the resolution state a Kafka record must be in to match,
	// besides passing the expression.
	state string
}

// Text is the expression as given.
func (f *Filter) Text() string { return f.text }

// Kind is what the filter evaluates over.
func (f *Filter) Kind() Kind { return f.kind }

var envs = map[Kind]func() (*cel.Env, error){Kafka: kafkaEnv, RabbitMQ: rabbitEnv}

func kafkaEnv() (*cel.Env, error) {
	dynMap := cel.MapType(cel.StringType, cel.DynType)
	return cel.NewEnv(ext.Strings(),
		cel.Variable("key", cel.StringType),
		cel.Variable("value", cel.DynType),
		cel.Variable("headers", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("dead_letter", dynMap),
		cel.Variable("partition", cel.IntType),
		cel.Variable("offset", cel.IntType),
		cel.Variable("timestamp", cel.TimestampType),
		cel.Variable("size", cel.IntType),
		cel.Variable("resolution", cel.StringType),
	)
}

func rabbitEnv() (*cel.Env, error) {
	dynMap := cel.MapType(cel.StringType, cel.DynType)
	return cel.NewEnv(ext.Strings(),
		cel.Variable("body", cel.DynType),
		cel.Variable("headers", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("properties", dynMap),
		cel.Variable("routing_key", cel.StringType),
		cel.Variable("exchange", cel.StringType),
		cel.Variable("dead_letter", dynMap),
	)
}

// Compile parses and checks expr for kind. The expression must be boolean. Errors: an empty,
// too long or wrong expression → ops.ErrInvalid (field "filter") carrying the compiler's message
// with its line and column and the source line marked under the error.
func Compile(kind Kind, expr string) (*Filter, error) {
	newEnv, ok := envs[kind]
	if !ok {
		return nil, fmt.Errorf("search: unknown kind %q", kind)
	}
	switch {
	case strings.TrimSpace(expr) == "":
		return nil, ops.Invalid("filter", "empty expression")
	case len(expr) > MaxExpressionBytes:
		return nil, ops.Invalid("filter", fmt.Sprintf("longer than %d bytes", MaxExpressionBytes))
	}
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("search: environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, &CompileError{Issues: compileIssues(iss)}
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, &CompileError{Issues: []Issue{{Line: 1, Column: 1,
			Message: fmt.Sprintf("the expression gives a %s; a filter must give a bool (true keeps the message)", t)}}}
	}
	prg, err := env.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100),
		cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, ops.Invalid("filter", err.Error())
	}
	f := &Filter{kind: kind, text: expr, prg: prg, paths: valuePaths(ast, documentVar[kind])}
	// A nil estimator leaves every variable's size unknown (unbounded), so a bounded Max holds
	// for any message.
	if est, err := env.EstimateCost(ast, unsized{}); err == nil && est.Max <= CostLimit && !hasComprehension(ast) {
		if f.bounded, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize)); err != nil {
			return nil, fmt.Errorf("search: program: %w", err)
		}
	}
	return f, nil
}

// unsized is a cost estimator that knows no sizes: each variable may be of any size.
type unsized struct{}

func (unsized) EstimateSize(cost.AstNode) *cost.SizeEstimate { return nil }
func (unsized) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// hasComprehension reports whether the expression loops (exists, all, map, filter): such a one is
// always evaluated with ctx, which interrupts a loop.
func hasComprehension(a *cel.Ast) bool {
	return len(celast.MatchDescendants(celast.NavigateAST(a.NativeRep()), celast.KindMatcher(celast.ComprehensionKind))) > 0
}

// CompileError is a filter the compiler refused; it is an ops.ErrInvalid.
type CompileError struct {
	Issues []Issue
}

// Issue is one compiler error, at a 1-based line and column of the expression.
type Issue struct {
	Line, Column int
	Message      string
}

func compileIssues(iss *cel.Issues) []Issue {
	var out []Issue
	for _, e := range iss.Errors() {
		out = append(out, Issue{Line: e.Location.Line(), Column: e.Location.Column() + 1, Message: e.Message})
	}
	if len(out) == 0 {
		out = append(out, Issue{Line: 1, Column: 1, Message: iss.String()})
	}
	return out
}

func (e *CompileError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		parts[i] = fmt.Sprintf("line %d, column %d: %s", is.Line, is.Column, is.Message)
	}
	return "filter: " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ops.ErrInvalid) true.
func (e *CompileError) Is(target error) bool { return target == ops.ErrInvalid }

// ErrCostLimit is an evaluation that spent more than CostLimit on one record; it is an
// ops.ErrInvalid, since the expression has to change.
var ErrCostLimit error = &ops.Error{Kind: ops.ErrInvalid, Message: fmt.Sprintf("filter: the expression exceeds the cost limit (%d) on a single message: "+
	"simplify it (nested comprehensions over large lists are the usual cause)", CostLimit)}

// eval runs the filter over one activation. An expression that fails on a message (a missing map
// key, a type mismatch) does not match it; evalErr says why, for a count and a sample. A cost
// limit breach or a done ctx is err.
// judge runs the filter over one message's variables; a nil filter keeps every message. An
// evaluation error counts against the message in errs (the first kept in first, named by where,
// for the answer); a failure to evaluate at all (the scan's context ended) is err.
func (f *Filter) judge(ctx context.Context, act interpreter.Activation, errs *int64, first *string, where func() string) (bool, error) {
	if f == nil {
		return true, nil
	}
	ok, evalErr, err := f.eval(ctx, act)
	if err != nil {
		return false, err
	}
	if evalErr != nil {
		if *errs++; *first == "" {
			*first = where() + ": " + evalErr.Error()
		}
	}
	return ok, nil
}

// keep counts a match and hands it to each, or keeps it in matches when there is none. It is false
// once limit matches are found (0: no limit; stopped says StoppedLimit), and the error of each.
func keep[M any](m M, each func(M) error, matches *[]M, matched *int64, limit int, stopped *string) (bool, error) {
	*matched++
	if each != nil {
		if err := each(m); err != nil {
			return false, err
		}
	} else {
		*matches = append(*matches, m)
	}
	if limit > 0 && *matched >= int64(limit) {
		*stopped = StoppedLimit
		return false, nil
	}
	return true, nil
}

func (f *Filter) eval(ctx context.Context, act interpreter.Activation) (match bool, evalErr, err error) {
	f.bind(act)
	if f.state != "" { // InState: a record in another state is no match, whatever the expression says
		if in, evalErr := f.inState(act); !in {
			return false, evalErr, nil
		}
	}
	var out ref.Val
	var e error
	if f.bounded != nil {
		// Short and bounded: ctx is checked between messages (by the scans), not inside one.
		out, _, e = f.bounded.Eval(act)
	} else {
		out, _, e = f.prg.ContextEval(ctx, act)
	}
	if e != nil {
		var cancelled interpreter.EvalCancelledError
		if errors.As(e, &cancelled) {
			if cancelled.Cause == interpreter.CostLimitExceeded {
				return false, nil, ErrCostLimit
			}
			if ctx.Err() != nil {
				return false, nil, ctx.Err()
			}
		}
		return false, e, nil
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the expression gave %s, not a bool", out.Type().TypeName()), nil
	}
	return b, nil, nil
}
