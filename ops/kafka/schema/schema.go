// Package schema decodes the keys and values of Kafka records that are not JSON text: Confluent
// Schema Registry wire format (magic byte 0, a 4-byte big-endian schema id, for Protobuf the
// message indexes, then Avro, Protobuf or JSON bytes) by the schema id in the record, and plain
// Avro or Protobuf by schema files configured per topic pattern. The result is JSON text, which
// everything downstream (message ids, masking, the pages and the API) reads instead of the bytes;
// the original bytes are never changed, so a replay republishes them as they were.
//
// Schemas are fetched once per id (concurrent look-ups of one id share one request, a few ids are
// fetched at a time), compiled and kept: a registry id names one schema forever. Reads wait on the
// registry about one Timeout in all, not one per id: a slow registry makes the records it has not
// answered for yet decode with a note, and a later read finds them decoded. A registry that cannot
// be reached makes records decode with an error note for a few seconds, then it is asked again,
// so a page always works and recovers without a restart.
package schema

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
)

// MaxJSONBytes caps Decoded.JSON; a larger decoded value is reported as an error instead.
const MaxJSONBytes = 1 << 20

// Options configure a Decoder. Every field is optional.
type Options struct {
	// Registry is the Schema Registry; nil decodes framed records only by Files (not at all).
	Registry *configs.SchemaRegistry
	// Files decode unframed keys and values of the topics they match, first match wins.
	Files []configs.TopicSchemas
	// Timeout bounds one registry request, and how long reads wait on the registry in all before
	// they decode ids it has not answered for yet with a note (see Decoder.allowance); zero means 5s.
	Timeout time.Duration
	// Retry is how long a registry that failed is not asked again (records decode with an error
	// note meanwhile); zero means 5s. An unknown id is asked again after 6 times Retry.
	Retry time.Duration
}

// Decoder decodes records of one cluster. It is safe for concurrent use; a nil *Decoder decodes
// nothing.
type Decoder struct {
	reg     *sr.Client // nil without a registry
	timeout time.Duration
	retry   time.Duration
	files   []fileRule
	now     func() time.Time

	fetches   chan struct{} // a slot per fetch running (maxFetches)
	mu        sync.RWMutex
	byID      map[int]*entry
	pending   map[int]*fetching // the ids being fetched
	down      time.Time         // the registry failed: do not ask it before this
	why       *registryDown     // the failure, for the note
	allowed   time.Duration     // what reads may still wait on the registry (allowance)
	allowedAt time.Time         // when allowed was last worked out
	// waiting reads are waiting on the registry, since waitingSince.
	waiting      int
	waitingSince time.Time
}

// entry is a resolved id: a compiled schema, or a failure to remember until expires.
type entry struct {
	s       *compiled
	err     error
	expires time.Time // zero: forever
}

// New builds a Decoder: it reads and compiles the schema files (a file that is missing or does not
// compile is an ops.ErrInvalid naming it) and prepares the registry client without dialling.
func New(opts Options) (*Decoder, error) {
	d := &Decoder{timeout: opts.Timeout, retry: opts.Retry, now: time.Now, byID: map[int]*entry{},
		pending: map[int]*fetching{}, fetches: make(chan struct{}, maxFetches)}
	if d.timeout <= 0 {
		d.timeout = 5 * time.Second
	}
	if d.retry <= 0 {
		d.retry = 5 * time.Second
	}
	if r := opts.Registry; r != nil {
		if r.URL == "" {
			return nil, ops.Invalid("schema_registry.url", "required")
		}
		copts := []sr.ClientOpt{sr.URLs(r.URL), sr.HTTPClient(&http.Client{Timeout: d.timeout}), sr.UserAgent("redrive")}
		if r.Username != "" || r.Password != "" {
			copts = append(copts, sr.BasicAuth(r.Username, string(r.Password)))
		}
		if r.TLS != nil && r.TLS.Enabled {
			tc, err := r.TLS.ClientConfig()
			if err != nil {
				return nil, fmt.Errorf("schema_registry.tls: %w", err)
			}
			copts = append(copts, sr.DialTLSConfig(tc))
		}
		cl, err := sr.NewClient(copts...)
		if err != nil {
			return nil, fmt.Errorf("schema registry client: %w", err)
		}
		d.reg = cl
	}
	for i, ts := range opts.Files {
		rule := fileRule{topics: ts.Topics}
		for _, p := range ts.Topics {
			if _, err := path.Match(p, ""); err != nil {
				return nil, ops.Invalid(fmt.Sprintf("schemas[%d].topics", i), fmt.Sprintf("bad pattern %q", p))
			}
		}
		var err error
		if rule.key, err = compileFile(ts.Key); err != nil {
			return nil, fmt.Errorf("%w", ops.Invalid(fmt.Sprintf("schemas[%d].key", i), err.Error()))
		}
		if rule.value, err = compileFile(ts.Value); err != nil {
			return nil, fmt.Errorf("%w", ops.Invalid(fmt.Sprintf("schemas[%d].value", i), err.Error()))
		}
		d.files = append(d.files, rule)
	}
	return d, nil
}

// Active reports whether d decodes anything at all.
func (d *Decoder) Active() bool { return d != nil && (d.reg != nil || len(d.files) > 0) }

// Decode reads a key (key true) or value of a record of topic. It returns nil when the bytes are
// not for a schema: no registry framing (or no registry) and no schema file for the topic. It
// never fails; a failure is the Error of the result.
func (d *Decoder) Decode(ctx context.Context, topic string, key bool, b []byte) *Decoded {
	if d == nil || len(b) == 0 {
		return nil
	}
	if d.reg != nil && len(b) >= 5 && b[0] == 0 {
		id := int(binary.BigEndian.Uint32(b[1:5]))
		s, err := d.lookup(ctx, id)
		if err != nil {
			return &Decoded{ID: id, Error: err.Error()}
		}
		out := &Decoded{Format: s.format, ID: id, Subject: s.subject, Type: s.typ}
		s.decode(out, b[5:])
		return out
	}
	for _, r := range d.files {
		if !r.matches(topic) {
			continue
		}
		s := r.value
		if key {
			s = r.key
		}
		if s == nil {
			return nil
		}
		out := &Decoded{Format: s.format, Type: s.typ}
		s.decode(out, b)
		return out
	}
	return nil
}

type waitForRegistry struct{}

// WaitForRegistry is ctx under which Decode waits for each id the registry has not answered for
// yet, as long as the look-up takes (at most twice Timeout once its turn comes), instead of
// decoding it raw with a note once reads have waited about one Timeout in all. It is for work that
// must read every value through its schema and that no page waits on, such as the message ids of
// a replay plan.
func WaitForRegistry(ctx context.Context) context.Context {
	return context.WithValue(ctx, waitForRegistry{}, true)
}

// maxFetches bounds the ids fetched from the registry at once; maxQueued bounds those waiting for
// a turn (past it an id is not asked for until a later read of it).
const (
	maxFetches = 4
	maxQueued  = 64
)

// fetching is one id's look-up in flight, shared by every read of that id.
type fetching struct {
	done chan struct{} // closed when s and err are set
	s    *compiled
	err  error
}

// registryDown is a registry failure that is not about the id: the registry's state, worded for
// people without naming an id, so that one note can be given for every id asked meanwhile.
type registryDown struct{ why string }

func (e *registryDown) Error() string { return e.why }
func (e *registryDown) Unwrap() error { return ops.ErrUnavailable }

// lookup returns the compiled schema of id, from the cache or the registry. An id not known yet
// is fetched in the background (once, however many reads want it, a few ids at a time), and the
// read waits for it only while the allowance lasts (see allowance): a page of many unknown ids
// behind a slow registry answers within about one Timeout, those it could not wait for shown raw
// with a note, and a later read finds them decoded.
func (d *Decoder) lookup(ctx context.Context, id int) (*compiled, error) {
	d.mu.RLock()
	e, ok := d.byID[id]
	d.mu.RUnlock()
	if ok && e.expires.IsZero() { // a compiled schema: kept forever, no clock to read
		return e.s, e.err
	}
	now := d.now()
	d.mu.Lock()
	if e, ok := d.byID[id]; ok && (e.expires.IsZero() || now.Before(e.expires)) {
		d.mu.Unlock()
		return e.s, e.err
	}
	if now.Before(d.down) {
		err := d.downNote(id, now)
		d.mu.Unlock()
		return nil, err
	}
	patient := ctx.Value(waitForRegistry{}) != nil
	f := d.pending[id]
	if f == nil {
		if len(d.pending) >= maxFetches+maxQueued && !patient {
			d.mu.Unlock()
			return nil, slowNote(id)
		}
		f = &fetching{done: make(chan struct{})}
		d.pending[id] = f
		// The fetch outlives this read: the others waiting on it, and the cache, want its answer.
		go d.fetchShared(context.WithoutCancel(ctx), id, f)
	}
	if patient {
		d.mu.Unlock()
		select { // the fetch ends within 2 Timeouts of its turn
		case <-f.done:
			return f.s, f.err
		case <-ctx.Done():
			return nil, slowNote(id)
		}
	}
	wait := d.allowance(now)
	d.mu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, dl.Sub(now))
	}
	select {
	case <-f.done:
		return f.s, f.err
	default:
	}
	if wait > 0 {
		d.mu.Lock()
		if d.waiting == 0 {
			d.waitingSince = now
		}
		d.waiting++
		d.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-f.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		d.mu.Lock()
		if d.waiting--; d.waiting == 0 {
			d.allowed = max(0, d.allowed-d.now().Sub(d.waitingSince))
		}
		d.mu.Unlock()
	}
	select {
	case <-f.done:
		return f.s, f.err
	default:
		return nil, slowNote(id)
	}
}

// allowance is how long reads may still wait on the registry (d.mu held): Timeout when it has been
// quick, less the time any read spent waiting (reads waiting together count once: twenty pages
// waiting on one id wait once), coming back at a tenth of the time that passes. A page that finds
// the registry slow thus waits about one Timeout in all, not one per id.
func (d *Decoder) allowance(now time.Time) time.Duration {
	if d.allowedAt.IsZero() {
		d.allowed = d.timeout
	} else if now.After(d.allowedAt) {
		d.allowed = min(d.timeout, d.allowed+now.Sub(d.allowedAt)/10)
	}
	d.allowedAt = now
	if d.waiting > 0 {
		return d.allowed - now.Sub(d.waitingSince)
	}
	return d.allowed
}

// slowNote is the note of an id whose look-up the read could not wait for.
func slowNote(id int) error {
	return fmt.Errorf("schema %d: the schema registry is slow to answer; it is still being asked", id)
}

// downNote is the note of an id while the registry is not asked (d.mu held).
func (d *Decoder) downNote(id int, now time.Time) error {
	again := (d.down.Sub(now) + time.Second - 1).Truncate(time.Second)
	return fmt.Errorf("schema %d: %w; asking it again in %s", id, d.why, ops.FormatAge(again))
}

// fetchShared fetches id when its turn comes and gives the answer to the cache and to f.
func (d *Decoder) fetchShared(ctx context.Context, id int, f *fetching) {
	d.fetches <- struct{}{}
	defer func() { <-d.fetches }()
	fctx, cancel := context.WithTimeout(ctx, 2*d.timeout)
	defer cancel()
	s, err := d.fetch(fctx, id)
	d.mu.Lock()
	now := d.now()
	var down *registryDown
	switch {
	case err == nil:
		d.byID[id] = &entry{s: s}
	case errors.As(err, &down):
		d.down, d.why = now.Add(d.retry), down
		err = d.downNote(id, now)
	case errors.Is(err, ops.ErrNotFound):
		d.byID[id] = &entry{err: err, expires: now.Add(6 * d.retry)}
	default: // the schema itself is unusable, and an id's schema never changes
		d.byID[id] = &entry{err: err}
	}
	delete(d.pending, id)
	f.s, f.err = s, err
	d.mu.Unlock()
	close(f.done)
}

// fetch asks the registry for id (and what it references) and compiles it. The subject it is
// filed under is asked at the same time, so it costs no wait of its own; it is a courtesy, and
// a failure to learn it does not stop decoding.
func (d *Decoder) fetch(ctx context.Context, id int) (*compiled, error) {
	subject := make(chan string, 1)
	go func() {
		vs, err := d.reg.SchemaVersionsByID(ctx, id)
		if err != nil || len(vs) == 0 {
			subject <- ""
			return
		}
		subject <- vs[0].Subject
	}()
	s, err := d.reg.SchemaByID(ctx, id)
	if err != nil {
		return nil, d.registryErr(fmt.Sprintf("schema %d", id), err)
	}
	c, err := d.compile(ctx, id, s)
	if err != nil {
		return nil, err
	}
	c.subject = <-subject
	return c, nil
}

// registryErr sorts a registry failure: an unknown id or subject is ops.ErrNotFound, anything
// else (unreachable, slow, 5xx, refused credentials) a *registryDown, an ops.ErrUnavailable.
func (d *Decoder) registryErr(what string, err error) error {
	var re *sr.ResponseError
	var ne net.Error
	switch {
	case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
		return ops.NotFound("%s: not found in the schema registry", what)
	case errors.As(err, &re) && (re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden):
		return &registryDown{fmt.Sprintf("the schema registry refused the configured credentials (HTTP %d)", re.StatusCode)}
	case errors.As(err, &re):
		return &registryDown{fmt.Sprintf("the schema registry is unavailable (it answered HTTP %d)", re.StatusCode)}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &registryDown{fmt.Sprintf("the schema registry is unavailable (no answer within %s)", ops.FormatAge(d.timeout))}
	}
	return &registryDown{"the schema registry is unavailable (it could not be reached)"}
}

// maxReferences bounds the schemas one schema may pull in through references.
const maxReferences = 256

// refSource is one referenced schema, by the name the referencing schema uses for it.
type refSource struct {
	name   string
	schema sr.Schema
}

// references fetches the schemas s references, recursively, dependencies first, each once.
func (d *Decoder) references(ctx context.Context, s sr.Schema) ([]refSource, error) {
	var out []refSource
	seen := map[string]bool{}
	var walk func(refs []sr.SchemaReference, depth int) error
	walk = func(refs []sr.SchemaReference, depth int) error {
		if depth > 32 {
			return errors.New("references nest more than 32 deep")
		}
		for _, r := range refs {
			k := fmt.Sprintf("%s/%d", r.Subject, r.Version)
			if seen[k] {
				continue
			}
			seen[k] = true
			if len(seen) > maxReferences {
				return fmt.Errorf("more than %d references", maxReferences)
			}
			ss, err := d.reg.SchemaByVersion(ctx, r.Subject, r.Version)
			if err != nil {
				return d.registryErr(fmt.Sprintf("reference %q (%s version %d)", r.Name, r.Subject, r.Version), err)
			}
			if err := walk(ss.References, depth+1); err != nil {
				return err
			}
			out = append(out, refSource{name: r.Name, schema: ss.Schema})
		}
		return nil
	}
	return out, walk(s.References, 0)
}

// compile turns a registry schema into a decoder for its payloads.
func (d *Decoder) compile(ctx context.Context, id int, s sr.Schema) (*compiled, error) {
	refs, err := d.references(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("schema %d: %w", id, err)
	}
	var c *compiled
	switch s.Type {
	case sr.TypeAvro:
		c, err = compileAvro(s.Schema, refs)
	case sr.TypeProtobuf:
		c, err = compileProto(fmt.Sprintf("schema-%d.proto", id), s.Schema, refs)
	case sr.TypeJSON:
		c, err = compileJSONSchema(s.Schema)
	default:
		err = fmt.Errorf("unsupported schema type %v", s.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("schema %d: %w", id, err)
	}
	return c, nil
}

// compiled is one schema ready to decode payloads.
type compiled struct {
	format  string
	subject string
	typ     string
	// decodeJSON returns the JSON of a payload (after the registry header) and, when the payload
	// picks one of several types (Protobuf message indexes), that type's name.
	decodeJSON func(payload []byte) (j []byte, typ string, err error)
}

func (c *compiled) decode(out *Decoded, payload []byte) {
	j, typ, err := c.decodeJSON(payload)
	if typ == "" {
		typ = c.typ
	} else {
		out.Type = typ
	}
	switch {
	case errors.Is(err, errTooLarge):
		out.Error = err.Error()
	case err != nil:
		// The type the payload picked (a Protobuf message index), not the schema's first.
		out.Error = fmt.Sprintf("the bytes do not decode as %s %s: %v", c.format, typ, err)
	case len(j) > MaxJSONBytes:
		out.Error = fmt.Sprintf("decoded value is %d bytes of JSON, more than the %d shown", len(j), MaxJSONBytes)
	default:
		out.JSON = j
	}
}

// fileRule is one kafka[].schemas entry, compiled.
type fileRule struct {
	topics     []string
	key, value *compiled
}

func (r fileRule) matches(topic string) bool {
	for _, p := range r.topics {
		if ok, _ := path.Match(p, topic); ok {
			return true
		}
	}
	return false
}
