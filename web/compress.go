package web

import (
	"bufio"
	"net/http"
	"sync"

	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
	"github.com/labstack/echo/v4"
)

// compressMinSize is the smallest answer worth gzipping: below it the gzip header and trailer
// outweigh what compression saves.
const compressMinSize = 1024

// compress gzips the answers of clients that accept gzip (unless skip says the route streams
// events or compresses its own), through klauspost/compress's gzhttp with stateless compression.
//
// Why stateless, not a pooled gzip.Writer (echo's Gzip middleware): a deflate writer holds its
// tables, and a sync.Pool keeps them only between requests that do not overlap and between
// garbage collections. A burst after a collection allocates a writer per response: 20 requests
// for a 100 KB page allocated 4.2 MB and took 9.8–10.7 ms through echo's writers, against 1.1 MB
// and 2.4–3.1 ms stateless (BenchmarkCompressBurst/cold; the page gzips to 7.7 KB instead of
// 6.8 KB). Under -race the writers' allocations were most of the console's CPU: 340 requests at
// once (TestTwentySimultaneousReadsOfEachPage) took 9–10.5 s, 3.4–4.8 s stateless. Pages are
// rendered whole and written in one write, so the dictionary stateless deflate drops between
// writes costs little. zstd is off: every browser gets the same answer, and zstd's encoders are
// the large state this avoids.
func compress(skip func(echo.Context) bool) echo.MiddlewareFunc {
	wrap, err := gzhttp.NewWrapper(gzhttp.MinSize(compressMinSize), gzhttp.CompressionLevel(gzip.StatelessCompression),
		gzhttp.EnableZstd(false))
	if err != nil {
		panic(err) // the options above are constants: only a programming error gets here
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip(c) {
				return next(c)
			}
			res := c.Response()
			plain := res.Writer
			// gzhttp closes its writer when the wrapped handler returns and reuses it for another
			// response: nothing may write through it afterwards. So an error is answered here,
			// through the compressor, and the plain writer is back whatever happens (a panic
			// included, which Recover above then answers on it).
			defer func() { res.Writer = plain }()
			wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				bw := &coalescing{ResponseWriter: w}
				defer bw.release()
				res.Writer = bw
				c.SetRequest(r)
				if err := next(c); err != nil {
					c.Error(err)
				}
			})).ServeHTTP(plain, c.Request())
			return nil
		}
	}
}

// coalesceSize is the least a stateless deflate block is given, but for the last.
const coalesceSize = 64 << 10

// coalescingBuffers are coalescing's buffers, taken only by responses written in small pieces.
var coalescingBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, coalesceSize) }}

// coalescing gathers small writes into blocks of coalesceSize before they reach the stateless
// compressor, which deflates every write on its own: an NDJSON export or search stream writes a
// line at a time, and 2,000 dead letters deflated line by line were 389 KB, gathered 34.5 KB
// (522 KB plain; a pooled deflate writer 28.3 KB). A page, written whole, goes through as it is:
// the buffer is taken on the first small write only. Flush empties it first, so a stream's lines
// still reach the client when the handler flushes.
type coalescing struct {
	http.ResponseWriter // gzhttp's
	buf                 *bufio.Writer
}

func (w *coalescing) Write(p []byte) (int, error) {
	if w.buf == nil {
		if len(p) >= coalesceSize {
			return w.ResponseWriter.Write(p)
		}
		w.buf = coalescingBuffers.Get().(*bufio.Writer)
		w.buf.Reset(w.ResponseWriter)
	}
	return w.buf.Write(p)
}

func (w *coalescing) Flush() {
	if w.buf != nil {
		_ = w.buf.Flush()
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (an export sets its write deadlines).
func (w *coalescing) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// release writes what is gathered, before gzhttp closes its compressor, and gives the buffer back.
func (w *coalescing) release() {
	if w.buf == nil {
		return
	}
	_ = w.buf.Flush()
	w.buf.Reset(nil)
	coalescingBuffers.Put(w.buf)
	w.buf = nil
}
