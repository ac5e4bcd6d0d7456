// Package schema decodes the keys and values of Kafka records that are not JSON text: Confluent
// Schema Registry wire format (magic byte 0, a 4-byte big-endian schema id, for Protobuf the
// message indexes, then Avro, Protobuf or JSON bytes) by the schema id in the record, and plain
// Avro or Protobuf by schema files configured per topic pattern. The result is JSON text, which
// everything downstream (message ids, masking, the pages and the API) reads instead of the bytes;
// the original bytes are never changed, so a replay republishes them as they were.
//
// Schemas are fetched once per id (concurrent look-ups of one id share one request), compiled and
// kept: a registry id names one schema forever. A registry that cannot be reached makes records
// decode with an error note for a few seconds, then it is asked again, so a page always works and
// recovers without a restart.
package schema

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"golang.org/x/sync/singleflight"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
)

// Formats, as reported in Decoded.Format.
const (
	FormatAvro       = "avro"
	FormatProtobuf   = "protobuf"
	FormatJSONSchema = "json_schema"
)

// MaxJSONBytes caps Decoded.JSON; a larger decoded value is reported as an error instead.
const MaxJSONBytes = 1 << 20

// Decoded is a key or value read through its schema.
type Decoded struct {
	Format  string // FormatAvro, FormatProtobuf or FormatJSONSchema; empty when the id could not be resolved
	ID      int    // the registry's schema id; 0 for a configured schema file
	Subject string // a subject the registry files the id under ("" when unknown or for files)
	Type    string // the record or message name, e.g. acme.Order; a JSON schema's title
	// JSON is the decoded content as compact JSON text; nil exactly when Error is set.
	JSON []byte
	// Error says why the bytes could not be decoded (unknown id, registry down, bytes that do not
	// match the schema); the bytes are then shown as they are.
	Error string
}

// Options configure a Decoder. Every field is optional.
type Options struct {
	// Registry is the Schema Registry; nil decodes framed records only by Files (not at all).
	Registry *configs.SchemaRegistry
	// Files decode unframed keys and values of the topics they match, first match wins.
	Files []configs.TopicSchemas
	// Timeout bounds one registry request; zero means 5s.
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

	group singleflight.Group
	mu    sync.RWMutex
	byID  map[int]*entry
	down  time.Time // the registry failed: do not ask it before this
	why   string    // the failure, for the note
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
	d := &Decoder{timeout: opts.Timeout, retry: opts.Retry, now: time.Now, byID: map[int]*entry{}}
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
			tc, err := ops.TLSConfig(r.TLS)
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

// errUnavailable marks a registry failure that is not about the id.
var errUnavailable = errors.New("schema registry unavailable")

// lookup returns the compiled schema of id, from the cache or the registry.
func (d *Decoder) lookup(ctx context.Context, id int) (*compiled, error) {
	d.mu.RLock()
	e, ok := d.byID[id]
	down, why := d.down, d.why
	d.mu.RUnlock()
	if ok && e.expires.IsZero() { // a compiled schema: kept forever, no clock to read
		return e.s, e.err
	}
	now := d.now()
	if ok && now.Before(e.expires) {
		return e.s, e.err
	}
	if now.Before(down) {
		return nil, fmt.Errorf("schema %d: %s (shown raw; retrying in %s)", id, why, down.Sub(now).Round(time.Second))
	}
	// The fetch outlives one caller's cancellation: the others waiting on it should not fail.
	v, err, _ := d.group.Do(fmt.Sprint(id), func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*d.timeout)
		defer cancel()
		s, err := d.fetch(fctx, id)
		d.mu.Lock()
		defer d.mu.Unlock()
		switch {
		case err == nil:
			d.byID[id] = &entry{s: s}
		case errors.Is(err, errUnavailable):
			d.down, d.why = d.now().Add(d.retry), err.Error()
		case errors.Is(err, ops.ErrNotFound):
			d.byID[id] = &entry{err: err, expires: d.now().Add(6 * d.retry)}
		default: // the schema itself is unusable, and an id's schema never changes
			d.byID[id] = &entry{err: err}
		}
		return s, err
	})
	if err != nil {
		return nil, err
	}
	return v.(*compiled), nil
}

// fetch asks the registry for id (and what it references) and compiles it.
func (d *Decoder) fetch(ctx context.Context, id int) (*compiled, error) {
	s, err := d.reg.SchemaByID(ctx, id)
	if err != nil {
		return nil, registryErr(fmt.Sprintf("schema %d", id), err)
	}
	subject := ""
	// Naming the subject is a courtesy: a failure here does not stop decoding.
	if vs, err := d.reg.SchemaVersionsByID(ctx, id); err == nil && len(vs) > 0 {
		subject = vs[0].Subject
	}
	c, err := d.compile(ctx, id, s)
	if err != nil {
		return nil, err
	}
	c.subject = subject
	return c, nil
}

// registryErr sorts a registry failure: an unknown id or subject is ops.ErrNotFound, anything
// else (unreachable, 5xx, refused credentials) is errUnavailable and ops.ErrUnavailable.
func registryErr(what string, err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return ops.NotFound("%s: not found in the schema registry", what)
	}
	if errors.As(err, &re) {
		return fmt.Errorf("%s: %w (HTTP %d): %w", what, errUnavailable, re.StatusCode, ops.ErrUnavailable)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w: %w", what, errUnavailable, err)
	}
	return fmt.Errorf("%s: %w: %w", what, errUnavailable, ops.ErrUnavailable)
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
				return registryErr(fmt.Sprintf("reference %q (%s version %d)", r.Name, r.Subject, r.Version), err)
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
