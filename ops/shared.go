package ops

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"golang.org/x/sync/singleflight"

	"github.com/redrive/redrive/ops/jsonpath"
)

// Bound gives ctx at most d unless it already ends sooner, so that a call against a dependency
// that died returns instead of retrying until the caller gives up: the adapters' one bound on a
// call (a Kafka request, a RabbitMQ call or browse).
func Bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// Within runs f but returns when ctx ends even if f does not, so that a caller can give up on a
// call that takes no context (a rabbit-hole request) or that finishes on a deadline of its own (a
// shared outbox query). f goes on in the background until it returns; its result is then dropped.
func Within[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // f's goroutine never blocks on a caller that has given up
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Shared runs read once for all concurrent callers of key in g: twenty viewers of the same page,
// or every replica's scrape, cost the dependency one read. The read is detached from the first
// caller's context, so that its going away does not fail the others, and bounded by timeout; a
// caller whose own context ends stops waiting with that error, named by what. Callers share the
// value: they must not change it (copy before masking or filtering in place).
func Shared[V any](ctx context.Context, g *singleflight.Group, key string, timeout time.Duration, what string, read func(context.Context) (V, error)) (V, error) {
	ch := startShared(ctx, g, key, timeout, read)
	var zero V
	select {
	case r := <-ch:
		if r.Err != nil {
			return zero, r.Err
		}
		return r.Val.(V), nil
	case <-ctx.Done():
		return zero, fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// SharedBehind starts read as Shared does (once for all concurrent callers of key, detached from
// ctx, bounded by timeout) without waiting for it: a read behind an answer that is already made
// (stale while revalidate). A caller of Shared with the same key meanwhile joins it.
func SharedBehind[V any](ctx context.Context, g *singleflight.Group, key string, timeout time.Duration, read func(context.Context) (V, error)) {
	startShared(ctx, g, key, timeout, read) // its channel is buffered: nobody need receive
}

func startShared[V any](ctx context.Context, g *singleflight.Group, key string, timeout time.Duration, read func(context.Context) (V, error)) <-chan singleflight.Result {
	return g.DoChan(key, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		return read(rctx)
	})
}

// MessageIDRules find a message's idempotency key (message_id): the first of Headers present on
// the message, else the first of JSONPaths that resolves in its JSON body (MessageIDFromJSON).
type MessageIDRules struct {
	Headers   []string
	JSONPaths []string
}

// MessageIDFromJSON finds a message's idempotency key in a JSON object body: the first of paths
// (message_id.json_paths: $.meta.id, $.items[0].id, or the old bare meta.id, whose numeric
// segments index arrays; see jsonpath.ParseMessageID) that leads to a non-empty string or a number.
// "" when the body is not a JSON object or no path resolves. Kafka and RabbitMQ share the rule.
func MessageIDFromJSON(body []byte, paths []string) string {
	return messageIDFromJSON(body, paths, false)
}

// MessageIDFromValidJSON is MessageIDFromJSON for a body known to be valid JSON (what a schema
// decoder wrote): the body is not checked again, which is most of the cost of a short path.
func MessageIDFromValidJSON(body []byte, paths []string) string {
	return messageIDFromJSON(body, paths, true)
}

func messageIDFromJSON(body []byte, paths []string, valid bool) string {
	if len(paths) == 0 {
		return ""
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return ""
	}
	// An id is usually one field of a large body (a decoded Avro or Protobuf page pays this per
	// record): the body is checked once and each path read in place (gjson), step by step so that
	// an index reads only arrays and a member only objects; never decoded into a tree.
	if !valid && !gjson.ValidBytes(trimmed) {
		return ""
	}
	for _, p := range paths {
		path, ok := parsedIDPath(p)
		if !ok {
			continue
		}
		// The first step is a member of the body (an object): read in place, with a copy made
		// only of the member found, not of the whole body.
		r := gjson.GetBytes(trimmed, path.first)
		if !r.Exists() {
			continue
		}
		if v, ok := gjsonPath(r, path.rest); ok {
			return v
		}
	}
	return ""
}

// idPath is one of message_id.json_paths parsed for gjson: the first step's key escaped, the
// steps after it.
type idPath struct {
	first string
	rest  jsonpath.Path
	ok    bool // a path a message id can be read by
}

// idPaths keeps the paths parsed: the same few are read for every record of a page. They are the
// configuration's (validated at start), so few; past maxIDPaths they are parsed each time.
var (
	idPaths    sync.Map // string → idPath
	idPathsLen atomic.Int32
)

const maxIDPaths = 256

func parsedIDPath(p string) (idPath, bool) {
	if v, ok := idPaths.Load(p); ok {
		return v.(idPath), v.(idPath).ok
	}
	var ip idPath
	path, _, err := jsonpath.ParseMessageID(p)
	if err == nil && len(path) > 0 && (path[0].Kind == jsonpath.StepKey || path[0].Kind == jsonpath.StepKeyOrIndex) {
		ip = idPath{first: gjson.Escape(path[0].Key), rest: path[1:], ok: true}
	}
	if idPathsLen.Load() < maxIDPaths {
		if _, loaded := idPaths.LoadOrStore(p, ip); !loaded {
			idPathsLen.Add(1)
		}
	}
	return ip, ip.ok
}

// gjsonPath follows path from r to a non-empty string or a number.
func gjsonPath(r gjson.Result, path jsonpath.Path) (string, bool) {
	for _, step := range path {
		switch step.Kind {
		case jsonpath.StepIndex:
			if !r.IsArray() {
				return "", false
			}
			r = r.Get(strconv.Itoa(step.Index))
		case jsonpath.StepKeyOrIndex: // the old bare form: a number indexes arrays, else a member
			if !r.IsArray() && !r.IsObject() {
				return "", false
			}
			r = r.Get(gjson.Escape(step.Key))
		default:
			if !r.IsObject() {
				return "", false
			}
			r = r.Get(gjson.Escape(step.Key))
		}
		if !r.Exists() {
			return "", false
		}
	}
	switch r.Type {
	case gjson.String:
		// gjson copies a string's bytes as they are; encoding/json (and the consumers that read
		// the id) replace each byte that is not UTF-8 with U+FFFD, and so does the id shown,
		// planned and looked up in the inbox. A rune conversion does exactly that.
		if !utf8.ValidString(r.Str) {
			return string([]rune(r.Str)), true
		}
		return r.Str, r.Str != ""
	case gjson.Number:
		return r.Raw, true
	}
	return "", false
}
