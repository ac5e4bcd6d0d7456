package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"unicode/utf8"

	"github.com/twmb/avro"

	"github.com/redrive/redrive/configs"
)

// compileFile reads a kafka[].schemas key or value; nil stays nil.
func compileFile(f *configs.SchemaFile) (*compiled, error) {
	switch {
	case f == nil:
		return nil, nil
	case f.AvroFile != "":
		text, err := os.ReadFile(f.AvroFile)
		if err != nil {
			return nil, err
		}
		s, err := avro.Parse(string(text))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.AvroFile, err)
		}
		return avroCompiled(s)
	case len(f.ProtoFiles) > 0:
		if f.Message == "" {
			return nil, errors.New("message is required with proto_files")
		}
		return compileProtoFiles(f.ProtoFiles, f.ImportPaths, f.Message)
	}
	return nil, errors.New("give avro_file or proto_files")
}

// compileJSONSchema reads a JSON Schema for its title; the payload is JSON already and is shown
// as it is (the schema is not enforced: a dead letter may be exactly the value that broke it).
func compileJSONSchema(text string) (*compiled, error) {
	var doc struct {
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return nil, fmt.Errorf("JSON schema: %w", err)
	}
	return &compiled{format: FormatJSONSchema, typ: doc.Title, decodeJSON: func(payload []byte) ([]byte, string, error) {
		// json.Compact passes bytes that are not UTF-8 through, and the API would give them as
		// "json" with each replaced by U+FFFD: such a value is shown raw, as a plain value is.
		if !utf8.Valid(payload) {
			return nil, "", errors.New("not UTF-8 text")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, payload); err != nil {
			return nil, "", errors.New("not JSON text")
		}
		return buf.Bytes(), "", nil
	}}, nil
}
