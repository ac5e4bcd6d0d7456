package schema

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/redrive/redrive/ops"
)

// Encode writes text — JSON as Decode gives it, an operator's edit of it — into the wire format
// of original, the key (key true) or value of a record of topic: with the registry schema id the
// original bytes carry (Avro: written with that writer schema; Protobuf: the same message
// indexes, the message from its protojson; JSON Schema: the framing and the compact JSON). It
// returns nil, nil when original is not for a schema (Decode returns nil for it), so the text is
// the value as it is. Text that does not fit the schema is a *MismatchError; a registry that does
// not answer an ops.ErrUnavailable and an id it does not know an ops.ErrConflict, each saying what
// to do; a value decoded through a configured schema file is an ops.ErrConflict (not encoded).
func (d *Decoder) Encode(ctx context.Context, topic string, key bool, original, text []byte) (*Encoded, error) {
	if d == nil || len(original) == 0 {
		return nil, nil
	}
	what := "value"
	if key {
		what = "key"
	}
	if d.reg == nil || len(original) < 5 || original[0] != 0 {
		for _, r := range d.files {
			if r.matches(topic) && ((key && r.key != nil) || (!key && r.value != nil)) {
				return nil, ops.Conflict("the %s was decoded with a schema file configured for topic %s (kafka[].schemas), "+
					"which Redrive does not encode back; replay it unedited, or edit only its headers", what, topic)
			}
		}
		return nil, nil
	}
	id := int(binary.BigEndian.Uint32(original[1:5]))
	s, err := d.reg.SchemaByID(ctx, id)
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			err = fmt.Errorf("schema %d: %w", id, ops.ErrNotFound)
		}
		return nil, encodeRegistryErr(id, what, err)
	}
	refs, err := d.references(ctx, s)
	if err != nil {
		return nil, encodeRegistryErr(id, what, err)
	}
	subject := ""
	if vs, err := d.reg.SchemaVersionsByID(ctx, id); err == nil && len(vs) > 0 {
		subject = vs[0].Subject
	}
	out := &Encoded{ID: id, Subject: subject}
	header := original[:5]
	var payload []byte
	switch s.Type {
	case sr.TypeAvro:
		out.Format = FormatAvro
		payload, out.Type, err = encodeAvro(s.Schema, refs, text, id)
	case sr.TypeProtobuf:
		out.Format = FormatProtobuf
		var prefix []byte
		prefix, payload, out.Type, err = encodeProto(fmt.Sprintf("schema-%d.proto", id), s.Schema, refs, original[5:], text, id)
		header = append(bytes.Clone(header), prefix...)
	case sr.TypeJSON:
		out.Format = FormatJSONSchema
		var buf bytes.Buffer
		if json.Compact(&buf, text) != nil {
			err = &MismatchError{Schema: fmt.Sprintf("JSON schema id %d", id), Problem: "is not JSON text"}
		}
		payload = buf.Bytes()
	default:
		return nil, ops.Conflict("schema %d of the %s has a type Redrive does not encode; replay it unedited", id, what)
	}
	if err != nil {
		var me *MismatchError
		if errors.As(err, &me) {
			return nil, err
		}
		return nil, &ops.Error{Kind: ops.ErrConflict, Err: err,
			Message: fmt.Sprintf("schema %d of the %s could not be used to encode the edit; replay it unedited", id, what)}
	}
	out.Bytes = append(bytes.Clone(header), payload...)
	return out, nil
}

// encodeRegistryErr says, for a person, why the schema to encode with could not be had.
func encodeRegistryErr(id int, what string, err error) error {
	if errors.Is(err, ops.ErrNotFound) {
		return &ops.Error{Kind: ops.ErrConflict, Err: err, Message: fmt.Sprintf("the %s was written with schema id %d, "+
			"which the schema registry does not know (was it deleted?): the edit cannot be encoded with it, and Redrive "+
			"does not publish it as plain JSON; restore the schema, or replay the record unedited", what, id)}
	}
	return ops.Unavailable(err, "the schema registry did not answer, so the edited %s cannot be encoded with schema id %d "+
		"it was written with; nothing was published as plain JSON — try again when the registry answers", what, id)
}

// parseEditJSON reads text as one JSON value, numbers kept as written.
func parseEditJSON(text []byte, schemaName string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &MismatchError{Schema: schemaName, Problem: "is not JSON text"}
	}
	if _, err := dec.Token(); err == nil {
		return nil, &MismatchError{Schema: schemaName, Problem: "holds more than one JSON value"}
	}
	return v, nil
}

// encodeAvro writes text with the Avro schema text (its references parsed first).
func encodeAvro(text string, refs []refSource, j []byte, id int) ([]byte, string, error) {
	var cache avro.SchemaCache
	for _, r := range refs {
		if _, err := cache.Parse(r.schema.Schema); err != nil {
			return nil, "", fmt.Errorf("reference %q: %w", r.name, err)
		}
	}
	s, err := cache.Parse(text)
	if err != nil {
		return nil, "", err
	}
	root := s.Root()
	typ := fullName(root, "")
	name := fmt.Sprintf("avro %s (schema id %d)", typ, id)
	w, err := newAvroWriter(root)
	if err != nil {
		return nil, typ, err
	}
	v, err := parseEditJSON(j, name)
	if err != nil {
		return nil, typ, err
	}
	b, err := w.write(w.root, v, "", nil)
	if err != nil {
		var pe *pathError
		if errors.As(err, &pe) {
			return nil, typ, &MismatchError{Schema: name, Path: pe.path, Problem: pe.problem}
		}
		return nil, typ, err
	}
	// What was written reads back with the same schema (the decoder the pages use).
	if _, _, err := w.prog.decodeJSON(b); err != nil {
		return nil, typ, fmt.Errorf("the encoded value does not decode again: %w", err)
	}
	return b, typ, nil
}

// encodeProto writes text as the message the original payload's indexes name, returning those
// indexes as the original wrote them and the message's bytes.
func encodeProto(main, text string, refs []refSource, payload, j []byte, id int) (prefix, msg []byte, typ string, err error) {
	fd, files, err := protoSources(main, text, refs)
	if err != nil {
		return nil, nil, "", err
	}
	// The indexes in the form the original was written in: the one whose message its bytes
	// decode as (as decodeIndexed reads them).
	md, rest, err := messageByIndexes(fd, payload)
	if err != nil || func() bool { _, e := unmarshalJSON(md, rest, files); return e != nil }() {
		if md2, rest2, err2 := messageByIndexesWith(fd, payload, uvarint); err2 == nil {
			md, rest, err = md2, rest2, nil
		}
	}
	if err != nil {
		return nil, nil, "", fmt.Errorf("the original's message indexes: %w", err)
	}
	typ = string(md.FullName())
	name := fmt.Sprintf("protobuf %s (schema id %d)", typ, id)
	if _, err := parseEditJSON(j, name); err != nil {
		return nil, nil, typ, err
	}
	m := dynamicpb.NewMessage(md)
	types := dynamicpb.NewTypes(files)
	if err := (protojson.UnmarshalOptions{Resolver: types}).Unmarshal(j, m); err != nil {
		return nil, nil, typ, &MismatchError{Schema: name, Problem: protoProblem(err)}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, nil, typ, &MismatchError{Schema: name, Problem: protoProblem(err)}
	}
	return payload[:len(payload)-len(rest)], b, typ, nil
}

// protoProblem is protojson's complaint without its package prefix and position: "invalid value
// for int32 field qty: "x"", "unknown field "colour"".
func protoProblem(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(strings.TrimPrefix(s, "proto:"), "\u00a0")
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "(line ") {
		if i := strings.Index(s, "): "); i >= 0 {
			s = s[i+3:]
		}
	}
	s = strings.ReplaceAll(s, "syntax error", "not JSON")
	return "does not fit: " + s
}
