package kafka

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDecodedSize checks the scan pools' sizing of a decompression buffer: a snappy block's own
// decoded length, the sum of a xerial-framed batch's blocks, and four times the compressed size
// for other codecs and for what does not parse.
func TestDecodedSize(t *testing.T) {
	block := func(s string) []byte { // a snappy block of one literal
		return append(binary.AppendUvarint(nil, uint64(len(s))), append([]byte{byte(len(s)-1) << 2}, s...)...)
	}
	xerial := func(blocks ...[]byte) []byte {
		b := append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
		for _, bl := range blocks {
			b = binary.BigEndian.AppendUint32(b, uint32(len(bl)))
			b = append(b, bl...)
		}
		return b
	}
	long := string(bytes.Repeat([]byte("x"), 50))
	for _, c := range []struct {
		name  string
		in    []byte
		codec kgo.CompressionCodecType
		want  int
	}{
		{"snappy block", block(long), kgo.CodecSnappy, 50},
		{"xerial", xerial(block(long), block("hello"), block(long)), kgo.CodecSnappy, 105},
		{"xerial cut short", xerial(block(long))[:30], kgo.CodecSnappy, 4 * 30},
		{"lz4", block(long), kgo.CodecLz4, 4 * len(block(long))},
		{"garbage", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, kgo.CodecSnappy, 24},
	} {
		if got := decodedSize(c.in, c.codec); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestLazyResetsEveryField guards Cluster.lazy, which writes a scan's record in place field by
// field: a field added to Record must be set or cleared there too (then count it here).
func TestLazyResetsEveryField(t *testing.T) {
	if n := reflect.TypeFor[Record]().NumField(); n != 15 {
		t.Fatalf("Record has %d fields: set or clear the new one in Cluster.lazy, then count it here", n)
	}
}
