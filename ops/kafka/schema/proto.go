package schema

import (
	"bytes"
	"context"
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
	srcs := map[string]string{main: text}
	for _, r := range refs {
		srcs[r.name] = r.schema.Schema
	}
	fd, files, err := compileSources(protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(srcs)}), main)
	if err != nil {
		return nil, err
	}
	typ := ""
	if fd.Messages().Len() > 0 {
		typ = string(fd.Messages().Get(0).FullName())
	}
	c := &compiled{format: FormatProtobuf, typ: typ}
	c.decodeJSON = func(payload []byte) ([]byte, string, error) {
		md, rest, err := messageByIndexes(fd, payload)
		if err != nil {
			return nil, "", err
		}
		j, err := unmarshalJSON(md, rest, files)
		return j, string(md.FullName()), err
	}
	return c, nil
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
	n, k := binary.Varint(b)
	if k <= 0 || n < 0 || n > 64 {
		return nil, nil, errors.New("bad message indexes")
	}
	b = b[k:]
	idx := []int64{0}
	if n > 0 {
		idx = make([]int64, n)
		for i := range idx {
			v, k := binary.Varint(b)
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
