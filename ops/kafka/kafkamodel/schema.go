package kafkamodel

import (
	"bytes"
	"fmt"

	"github.com/redrive/redrive/ops"
)

// Formats, as reported in Decoded.Format.
const (
	FormatAvro       = "avro"
	FormatProtobuf   = "protobuf"
	FormatJSONSchema = "json_schema"
)

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

// Encoded is JSON text encoded back into the wire format of the bytes it replaces: the same
// registry framing (magic byte, schema id, for Protobuf the same message indexes), then the
// payload written with that schema.
type Encoded struct {
	Bytes   []byte
	Format  string // FormatAvro, FormatProtobuf or FormatJSONSchema
	ID      int
	Subject string
	Type    string
}

// Describe names the encoding for a person: "avro acme.Order with schema id 3 (orders-value)".
func (e *Encoded) Describe() string {
	s := e.Format
	if e.Type != "" {
		s += " " + e.Type
	}
	s += fmt.Sprintf(" with schema id %d", e.ID)
	if e.Subject != "" {
		s += " (" + e.Subject + ")"
	}
	return s
}

// MismatchError is JSON text that does not fit the schema it is to be encoded with: Path names
// the place ("items[2].qty", "" for the whole value) and Problem what is wrong, in words for a
// person. It is an ops.ErrInvalid.
type MismatchError struct {
	Schema  string // "avro acme.Order (schema id 3)"
	Path    string
	Problem string
}

func (e *MismatchError) Error() string {
	where := "the value"
	if e.Path != "" {
		where = "field " + e.Path
	}
	return fmt.Sprintf("does not fit %s: %s %s", e.Schema, where, e.Problem)
}

// Is makes errors.Is(err, ops.ErrInvalid) true.
func (e *MismatchError) Is(target error) bool { return target == ops.ErrInvalid }

// cloneDecoded copies a decoded key or value, whose JSON may be the record's own bytes (a JSON
// Schema's value is).
func cloneDecoded(d *Decoded) *Decoded {
	if d == nil {
		return nil
	}
	c := *d
	c.JSON = bytes.Clone(d.JSON)
	return &c
}
