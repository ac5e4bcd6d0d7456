package handlers

import (
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

func TestCRC32Combine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range [][2]int{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {17, 3}, {1000, 70_000}, {3, 1 << 20}} {
		a, b := make([]byte, n[0]), make([]byte, n[1])
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		want := crc32.ChecksumIEEE(append(append([]byte{}, a...), b...))
		if got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b))); got != want {
			t.Errorf("%v: %08x, want %08x", n, got, want)
		}
	}
}

// Stored and deflated parts concatenate into one stream that Go's inflater (an independent
// decoder of RFC 1951) reads back whole, for heads past a stored block's 65,535 bytes too.
func TestSplicedDeflate(t *testing.T) {
	head := bytes.Repeat([]byte(`{"a":1}`), 20_000) // 140,000 bytes: three stored blocks
	mid := bytes.Repeat([]byte(`[{"group":"billing","lag":12}]`), 5_000)
	tail := []byte("}\n")
	stream := append(append(storedPart(head, false), deflatePart(mid, false)...), storedPart(tail, true)...)
	got, err := io.ReadAll(flate.NewReader(bytes.NewReader(stream)))
	if err != nil || !bytes.Equal(got, append(append(append([]byte{}, head...), mid...), tail...)) {
		t.Fatalf("inflate: %d bytes, %v", len(got), err)
	}
}
