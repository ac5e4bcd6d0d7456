package search

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cel.dev/cel-go/interpreter"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// RabbitSource is what a scan needs of a broker; *rabbit.Broker implements it.
type RabbitSource interface {
	// Scan browses up to limit messages of the queue's head, handing each to each until it says
	// false (see rabbit.Broker.Scan).
	Scan(ctx context.Context, vhost, queue string, limit int, each func(rabbitmodel.Message) bool) (rabbitmodel.BrowseResult, error)
}

// RabbitQuery is one scan of a queue's head. A queue has no positions to go on from: a scan
// always reads from the head, MaxScan messages at most.
type RabbitQuery struct {
	Vhost, Queue string  // required
	Filter       *Filter // nil keeps every message
	Limit        int     // stops at this many matches; 0 does not
	MaxScan      int     // messages of the head to read: 1..rabbitmodel.MaxPeek (required)
	Timeout      time.Duration
	View         func(rabbitmodel.Message) rabbitmodel.Message // as Query.View
	Each         func(rabbitmodel.Message) error               // as Query.Each
	Progress     func(scanned, matched int64)
}

// RabbitResult is what a queue scan found.
type RabbitResult struct {
	Matches          []rabbitmodel.Message
	Scanned, Matched int64
	EvalErrors       int64
	EvalError        string
	Stopped          string // as Result.Stopped
	Exhausted        bool   // every ready message of the queue was read
	Browse           rabbitmodel.BrowseResult
}

// ScanRabbit browses the head of a queue and evaluates the filter on each message, until MaxScan
// messages or the queue's end are read, Limit matches are found or Timeout passes: the browse
// then stops reading, and the result has the matches found with Stopped saying why. Errors:
// ErrInvalid (max_scan out of range, the cost limit), the browse's errors (rabbit.Broker.Browse),
// the error of Each.
func ScanRabbit(ctx context.Context, src RabbitSource, q RabbitQuery) (RabbitResult, error) {
	if q.MaxScan < 1 || q.MaxScan > rabbitmodel.MaxPeek {
		return RabbitResult{}, ops.Invalid("max_scan", fmt.Sprintf("must be in [1, %d] for a queue", rabbitmodel.MaxPeek))
	}
	res := RabbitResult{Matches: []rabbitmodel.Message{}}
	// The scan stops reading at the deadline (checkpoint); the browse gets readGrace longer.
	readCtx, deadline, cancel := scanDeadline(ctx, q.Timeout)
	defer cancel()
	var stopErr error
	br, err := src.Scan(readCtx, q.Vhost, q.Queue, q.MaxScan, func(m rabbitmodel.Message) bool {
		res.Scanned++
		if q.View != nil {
			m = q.View(m)
		}
		var vars interpreter.Activation
		if q.Filter != nil {
			vars = &rabbitVars{m: &m, paths: q.Filter.paths}
		}
		ok, err := q.Filter.judge(ctx, vars, &res.EvalErrors, &res.EvalError, func() string { return fmt.Sprintf("position %d", m.Position) })
		if err != nil {
			stopErr = err
			return false
		}
		if ok {
			if more, err := keep(m, q.Each, &res.Matches, &res.Matched, q.Limit, &res.Stopped); !more {
				stopErr = err // nil at the limit
				return false
			}
		}
		return checkpoint(q.Progress, res.Scanned, res.Matched, deadline, &res.Stopped)
	})
	if stopErr != nil {
		return RabbitResult{}, stopErr
	}
	if err != nil {
		// Out of time before the browse could end by itself: what it found so far is the answer,
		// as a Kafka scan's (the browse returned what it took all the same).
		if deadline.IsZero() || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return RabbitResult{}, err
		}
		res.Stopped = StoppedTimeout
	}
	if q.Progress != nil {
		q.Progress(res.Scanned, res.Matched)
	}
	res.Browse = br
	if res.Stopped == "" {
		if res.Scanned >= int64(q.MaxScan) && br.Ready > res.Scanned {
			res.Stopped = StoppedMaxScan
		} else {
			res.Stopped, res.Exhausted = StoppedEnd, true
		}
	}
	return res, nil
}
