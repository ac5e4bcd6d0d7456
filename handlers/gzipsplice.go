package handlers

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/labstack/echo/v4"
)

// Precompressed answers: a large body that is the same for many readers (the groups of one
// snapshot, ~1.4 MB at 200 groups × 50 partitions) is deflated once and spliced between a small
// head and tail deflated per request, so that gzip costs each reader the head's few hundred bytes
// instead of ~5 ms of CPU. Deflate allows it: each part ends with a sync flush (byte-aligned, not
// final) and refers only to its own bytes, so the parts concatenate into one valid stream; the
// gzip trailer's CRC-32 and length are those of the whole text. The routes that use it are
// skipped by the server's gzip middleware (web: PrecompressedRoutes).

// gzipLevel is the shared parts' compression level. A part is deflated once per snapshot, not per
// answer, so it affords more than the middleware's stateless compression of each answer. The
// deflater is klauspost/compress's, as the middleware's: at this level it takes 0.6 of the
// standard library's CPU for 12% more bytes (BenchmarkDeflateGroups: 3.6–4.6 against 6.6–7.2 ms).
const gzipLevel = 5

// deflatePart compresses b as a non-final part of a deflate stream (final: the last part).
func deflatePart(b []byte, final bool) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, gzipLevel) // the level is valid: no error
	_, _ = w.Write(b)                        // a bytes.Buffer does not fail
	if final {
		_ = w.Close()
	} else {
		_ = w.Flush()
	}
	return buf.Bytes()
}

// storedPart is b as stored (uncompressed) deflate blocks: for the per-request head and tail, a
// few hundred bytes that compressing would save little of and cost a compressor's ~1 MB state.
func storedPart(b []byte, final bool) []byte {
	out := make([]byte, 0, len(b)+5*(len(b)/0xffff+1))
	for {
		n := min(len(b), 0xffff)
		last := byte(0)
		if final && n == len(b) {
			last = 1
		}
		out = append(out, last) // BFINAL, BTYPE=00 (stored); the rest of the byte is padding
		out = binary.LittleEndian.AppendUint16(out, uint16(n))
		out = binary.LittleEndian.AppendUint16(out, ^uint16(n))
		out, b = append(out, b[:n]...), b[n:]
		if len(b) == 0 {
			return out
		}
	}
}

// sharedPart is a body part many answers share: its text, its CRC-32 and its deflated form, made
// once, when first wanted (Deflated): identity readers never pay for a compression.
type sharedPart struct {
	text     []byte
	crc      uint32
	deflate  sync.Once
	deflated []byte
}

func newSharedPart(text []byte) *sharedPart {
	return &sharedPart{text: text, crc: crc32.ChecksumIEEE(text)}
}

// Deflated is the part's deflated form; concurrent first callers wait for the one making it.
func (p *sharedPart) Deflated() []byte {
	p.deflate.Do(func() { p.deflated = deflatePart(p.text, false) })
	return p.deflated
}

// acceptsGzip reports whether the request accepts a gzip answer (any gzip token not q=0).
func acceptsGzip(r *http.Request) bool {
	for _, enc := range strings.Split(r.Header.Get(echo.HeaderAcceptEncoding), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(enc), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// spliceJSON answers head + shared + tail as JSON, gzipped around the shared part's precompressed
// form when gzip (the client accepts it: acceptsGzip), else as it is. The parts are written one after another under
// their summed Content-Length, never joined: joining them cost each read a fresh ~1.4 MB buffer,
// its zeroing and its copy — at 8 readers more CPU than the writes themselves, and the garbage
// whose collection made the slowest reads slower.
func spliceJSON(c echo.Context, gzip bool, head []byte, shared *sharedPart, tail []byte) error {
	res := c.Response()
	res.Header().Add(echo.HeaderVary, echo.HeaderAcceptEncoding)
	if !gzip {
		return writeParts(c, head, shared.text, tail)
	}
	crc := crc32Combine(crc32Combine(crc32.ChecksumIEEE(head), shared.crc, int64(len(shared.text))), crc32.ChecksumIEEE(tail), int64(len(tail)))
	size := uint32(len(head) + len(shared.text) + len(tail)) // ISIZE is the length mod 2^32
	// RFC 1952: magic, CM=deflate, no flags, no mtime, XFL 0, OS unknown.
	first := append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, storedPart(head, false)...)
	last := binary.LittleEndian.AppendUint32(storedPart(tail, true), crc)
	last = binary.LittleEndian.AppendUint32(last, size)
	res.Header().Set(echo.HeaderContentEncoding, "gzip")
	return writeParts(c, first, shared.Deflated(), last)
}

// writeParts answers 200 with the parts, in order, as one JSON body of their summed length.
func writeParts(c echo.Context, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	res.Header().Set(echo.HeaderContentLength, strconv.Itoa(n))
	res.WriteHeader(http.StatusOK)
	for _, p := range parts {
		if _, err := res.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// crc32Combine is the CRC-32 (IEEE) of A‖B from crc1 of A, crc2 of B and B's length, without
// reading B again (zlib's crc32_combine: appending len2 zero bytes is a linear map over GF(2),
// applied by repeated squaring of its matrix).
func crc32Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1 ^ crc2
	}
	var even, odd [32]uint32
	odd[0] = 0xedb88320 // the reflected IEEE polynomial: the operator for one zero bit
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four
	for {
		gf2Square(&even, &odd) // one zero byte, then 4, 16, …
		if len2&1 != 0 {
			crc1 = gf2Times(&even, crc1)
		}
		if len2 >>= 1; len2 == 0 {
			break
		}
		gf2Square(&odd, &even)
		if len2&1 != 0 {
			crc1 = gf2Times(&odd, crc1)
		}
		if len2 >>= 1; len2 == 0 {
			break
		}
	}
	return crc1 ^ crc2
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range 32 {
		square[n] = gf2Times(mat, mat[n])
	}
}
