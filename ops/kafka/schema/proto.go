package schema

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// protoJSON prints messages with the field names of the .proto (what an operator reads in the
// schema and writes in json_paths) and with unset fields shown as their zero values, since a
// dead letter's missing field is often the point.
var protoJSON = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

// compileProto compiles a registry Protobuf schema (main names it, refs are the files it imports
// by the names it imports them as; the well-known google/protobuf files are built in). Payloads
// start with the message indexes that pick the message inside the file.
func compileProto(main, text string, refs []refSource) (*compiled, error) {
	fd, files, err := protoSources(main, text, refs)
	if err != nil {
		return nil, err
	}
	typ := ""
	if fd.Messages().Len() > 0 {
		typ = string(fd.Messages().Get(0).FullName())
	}
	c := &compiled{format: FormatProtobuf, typ: typ}
	c.decodeJSON = func(payload []byte) ([]byte, string, error) { return decodeIndexed(fd, files, payload) }
	return c, nil
}

// protoSources compiles a registry Protobuf schema and what it imports: the file and the
// registry of every file (the encoder of an edit needs them as the decoder does).
func protoSources(main, text string, refs []refSource) (protoreflect.FileDescriptor, *protoregistry.Files, error) {
	srcs := map[string]string{main: text}
	for _, r := range refs {
		srcs[r.name] = r.schema.Schema
	}
	sources := &protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)}
	// Confluent's own clients (the Python and .NET serializers) register a Protobuf schema as a
	// base64 FileDescriptorProto rather than .proto text; a real registry keeps it so. Such a file
	// is handed to the compiler as a descriptor; .proto text (never valid base64: it has spaces)
	// as source.
	resolver := protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		if fdp := descriptorText(srcs[path]); fdp != nil {
			fdp.Name = proto.String(path)
			return protocompile.SearchResult{Proto: fdp}, nil
		}
		return sources.FindFileByPath(path)
	})
	return compileSources(protocompile.WithStandardImports(resolver), main)
}

// descriptorText is the FileDescriptorProto a schema's text holds base64-encoded, or nil when the
// text is .proto source.
func descriptorText(text string) *descriptorpb.FileDescriptorProto {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil || len(raw) == 0 {
		return nil
	}
	fdp := &descriptorpb.FileDescriptorProto{}
	if proto.Unmarshal(raw, fdp) != nil || (len(fdp.GetMessageType()) == 0 && len(fdp.GetEnumType()) == 0) {
		return nil
	}
	// protoc fills every field's json_name in the descriptors it writes, and the compiler reads a
	// descriptor as protoc's output; Python's CopyToProto leaves it out. The default is protoc's:
	// the name in lower camel case.
	var clean func(ms []*descriptorpb.DescriptorProto)
	clean = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, f := range m.GetField() {
				if f.GetJsonName() == "" {
					f.JsonName = proto.String(jsonName(f.GetName()))
				}
			}
			clean(m.GetNestedType())
		}
	}
	clean(fdp.GetMessageType())
	return fdp
}

// jsonName is protoc's default JSON name of a field: underscores dropped, the letter after each
// upper-cased.
func jsonName(name string) string {
	var b strings.Builder
	up := false
	for _, r := range name {
		switch {
		case r == '_':
			up = true
		case up && r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			up = false
		default:
			b.WriteRune(r)
			up = false
		}
	}
	return b.String()
}

// compileProtoFiles compiles .proto files from disk for plain (unframed) payloads of one message.
func compileProtoFiles(f []string, importPaths []string, message string) (*compiled, error) {
	paths := append([]string{}, importPaths...)
	rel := make([]string, len(f))
	for i, p := range f {
		dir := filepath.Dir(p)
		if len(importPaths) == 0 {
			paths = append(paths, dir)
		}
		rel[i] = p
		for _, ip := range paths {
			if r, err := filepath.Rel(ip, p); err == nil && !strings.HasPrefix(r, "..") {
				rel[i] = filepath.ToSlash(r)
				break
			}
		}
	}
	res := protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: paths, Accessor: func(p string) (io.ReadCloser, error) {
		return os.Open(p)
	}})
	_, files, err := compileSources(res, rel...)
	if err != nil {
		return nil, err
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(message))
	if err != nil {
		return nil, fmt.Errorf("message %s: not defined in %s", message, strings.Join(f, ", "))
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a message", message)
	}
	return &compiled{format: FormatProtobuf, typ: message, decodeJSON: func(payload []byte) ([]byte, string, error) {
		j, err := unmarshalJSON(md, payload, files)
		return j, "", err
	}}, nil
}

// compileSources compiles names and returns the first file and a registry of all of them (for
// Any fields and extensions).
func compileSources(res protocompile.Resolver, names ...string) (protoreflect.FileDescriptor, *protoregistry.Files, error) {
	comp := protocompile.Compiler{Resolver: res, MaxParallelism: 1}
	out, err := comp.Compile(context.Background(), names...)
	if err != nil {
		return nil, nil, err
	}
	files := &protoregistry.Files{}
	var add func(fd protoreflect.FileDescriptor) error
	seen := map[string]bool{}
	add = func(fd protoreflect.FileDescriptor) error {
		if seen[fd.Path()] {
			return nil
		}
		seen[fd.Path()] = true
		imps := fd.Imports()
		for i := range imps.Len() {
			if err := add(imps.Get(i).FileDescriptor); err != nil {
				return err
			}
		}
		return files.RegisterFile(fd)
	}
	for _, fd := range out {
		if err := add(fd); err != nil {
			return nil, nil, err
		}
	}
	return out[0], files, nil
}

// messageByIndexes reads Confluent's message indexes (zigzag varints: a count, then the index of
// the message at each nesting level; a lone 0 means the first message) and finds that message.
func messageByIndexes(fd protoreflect.FileDescriptor, b []byte) (protoreflect.MessageDescriptor, []byte, error) {
	return messageByIndexesWith(fd, b, binary.Varint)
}

// uvarint reads an unsigned varint as messageByIndexesWith wants it: Confluent's Python
// serializer before 1.8 wrote the message indexes unsigned, not zigzag (its
// "use.deprecated.format"); such dead letters are still in topics.
func uvarint(b []byte) (int64, int) {
	v, k := binary.Uvarint(b)
	if v > 1<<31 {
		return 0, 0
	}
	return int64(v), k
}

// decodeIndexed finds the payload's message by its indexes and decodes it; when that fails it
// tries the indexes as the pre-1.8 Python serializer wrote them.
func decodeIndexed(fd protoreflect.FileDescriptor, files *protoregistry.Files, payload []byte) ([]byte, string, error) {
	md, rest, err := messageByIndexes(fd, payload)
	if err == nil {
		j, uerr := unmarshalJSON(md, rest, files)
		if uerr == nil {
			return j, string(md.FullName()), nil
		}
		err = uerr
	}
	if md2, rest2, err2 := messageByIndexesWith(fd, payload, uvarint); err2 == nil {
		j, uerr := unmarshalJSON(md2, rest2, files)
		if uerr == nil {
			return j, string(md2.FullName()), nil
		}
		if md == nil { // only the old form names a message: what failed is that message
			md, err = md2, uerr
		}
	}
	if md != nil {
		return nil, string(md.FullName()), err
	}
	return nil, "", err
}

func messageByIndexesWith(fd protoreflect.FileDescriptor, b []byte, varint func([]byte) (int64, int)) (protoreflect.MessageDescriptor, []byte, error) {
	n, k := varint(b)
	if k <= 0 || n < 0 || n > 64 {
		return nil, nil, errors.New("bad message indexes")
	}
	b = b[k:]
	idx := []int64{0}
	if n > 0 {
		idx = make([]int64, n)
		for i := range idx {
			v, k := varint(b)
			if k <= 0 {
				return nil, nil, errors.New("bad message indexes")
			}
			idx[i], b = v, b[k:]
		}
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range idx {
		if i < 0 || int(i) >= msgs.Len() {
			return nil, nil, fmt.Errorf("message index %v: no such message in %s", idx, fd.Path())
		}
		md = msgs.Get(int(i))
		msgs = md.Messages()
	}
	return md, b, nil
}

func unmarshalJSON(md protoreflect.MessageDescriptor, b []byte, files *protoregistry.Files) ([]byte, error) {
	m := dynamicpb.NewMessage(md)
	types := dynamicpb.NewTypes(files)
	if err := (proto.UnmarshalOptions{Resolver: types}).Unmarshal(b, m); err != nil {
		return nil, err
	}
	opts := protoJSON
	opts.Resolver = types
	j, err := opts.Marshal(m)
	if err != nil {
		return nil, err
	}
	// protojson varies its spacing on purpose; the console shows one stable form.
	var buf bytes.Buffer
	if err := json.Compact(&buf, j); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
