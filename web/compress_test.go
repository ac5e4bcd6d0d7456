package web

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// page is an HTML table of n rows, as the record pages render: a few kilobytes a row apart.
func page(n int) []byte {
	var b bytes.Buffer
	b.WriteString("<!doctype html><html><body><table>")
	for i := range n {
		fmt.Fprintf(&b, `<tr data-key="0:%d"><td class="mono">%d</td><td>orders.DLT</td><td>java.lang.IllegalStateException: order %d failed validation</td><td><time datetime="2026-12-05T10:%02d:00Z">%d min ago</time></td></tr>`,
			i, i, i*7919%100000, i%60, i%60)
	}
	b.WriteString("</table></body></html>")
	return b.Bytes()
}

// compressed is an echo with compress (skipping /skipped) behind Recover, as New orders them.
func compressed() *echo.Echo {
	e := echo.New()
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true}), compress(func(c echo.Context) bool { return c.Path() == "/skipped" }))
	big := page(500)
	e.GET("/page", func(c echo.Context) error { return c.HTMLBlob(http.StatusOK, big) })
	e.GET("/skipped", func(c echo.Context) error { return c.HTMLBlob(http.StatusOK, big) })
	e.GET("/small", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/fails", func(c echo.Context) error {
		return echo.NewHTTPError(http.StatusNotFound, strings.Repeat("no such record; ", 200))
	})
	e.GET("/panics", func(echo.Context) error { panic("boom") })
	e.GET("/lines", func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentType, "application/x-ndjson")
		c.Response().WriteHeader(http.StatusOK)
		_, err := c.Response().Write(lines())
		return err
	})
	e.GET("/lines-one-by-one", func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentType, "application/x-ndjson")
		c.Response().WriteHeader(http.StatusOK)
		for l := range bytes.Lines(lines()) {
			if _, err := c.Response().Write(l); err != nil {
				return err
			}
		}
		return nil
	})
	e.GET("/stream", func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentType, "text/plain")
		c.Response().WriteHeader(http.StatusOK)
		_, _ = c.Response().Write([]byte("first\n"))
		c.Response().Flush()
		time.Sleep(300 * time.Millisecond)
		_, _ = c.Response().Write([]byte("second\n"))
		return nil
	})
	return e
}

// lines is an NDJSON export's body: 2,000 dead letters alike but for their ids and values.
func lines() []byte {
	var b bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&b, `{"topic":"orders.DLT","partition":%d,"offset":%d,"headers":{"kafka_dlt-exception-fqcn":"java.lang.IllegalStateException","kafka_dlt-original-topic":"orders","messageId":"m-%d"},"value":"{\"orderId\":\"o-%d\",\"amount\":%d}"}`+"\n",
			i%3, i, i, i, i*13%1000)
	}
	return b.Bytes()
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v (%.40q)", err, b)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// What compress answers: a page gzipped for a client that accepts gzip (decoded by the standard
// library's reader, byte for byte the page), as it is otherwise or when skipped; a short answer
// plain; an error and a panic answered whole through it (the error handler writes while the
// compressor is open, the panic's 500 on the plain writer); NDJSON written a line at a time
// compressed as well as written whole; a flushed stream reaching the client before the handler
// ends; twenty at once, each its own page.
func TestCompress(t *testing.T) {
	srv := httptest.NewServer(compressed())
	defer srv.Close()
	want := string(page(500))

	resp, body := onTheWire(t, srv.URL+"/page", "gzip, deflate, br, zstd", nil)
	if resp.Header.Get("Content-Encoding") != "gzip" || gunzip(t, body) != want || resp.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("page: %d %v", resp.StatusCode, resp.Header)
	}
	if len(body)*4 > len(want) {
		t.Errorf("page: %d bytes gzipped of %d", len(body), len(want))
	}
	for _, c := range []struct{ path, enc string }{{"/page", ""}, {"/page", "gzip;q=0"}, {"/skipped", "gzip"}} {
		if resp, body := onTheWire(t, srv.URL+c.path, c.enc, nil); resp.Header.Get("Content-Encoding") != "" || string(body) != want {
			t.Errorf("%s accepting %q: %v, %d bytes; want the page as it is", c.path, c.enc, resp.Header, len(body))
		}
	}
	if resp, body := onTheWire(t, srv.URL+"/small", "gzip", nil); resp.Header.Get("Content-Encoding") != "" || string(body) != "ok" {
		t.Errorf("small: %v %q", resp.Header, body)
	}
	resp, body = onTheWire(t, srv.URL+"/fails", "gzip", nil)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(gunzip(t, body), "no such record") {
		t.Errorf("error: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body = onTheWire(t, srv.URL+"/panics", "gzip", nil)
	if resp.StatusCode != http.StatusInternalServerError || resp.Header.Get("Content-Encoding") != "" || !strings.Contains(string(body), "Internal Server Error") {
		t.Errorf("panic: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	// A stream written a line at a time compresses as well as one written whole: the lines are
	// gathered into blocks before the stateless compressor, which deflates each write on its own.
	_, whole := onTheWire(t, srv.URL+"/lines", "gzip", nil)
	_, oneByOne := onTheWire(t, srv.URL+"/lines-one-by-one", "gzip", nil)
	if gunzip(t, whole) != string(lines()) || gunzip(t, oneByOne) != string(lines()) || len(oneByOne) > len(whole)*5/4 ||
		len(oneByOne)*8 > len(lines()) {
		t.Errorf("NDJSON of %d bytes: %d gzipped written whole, %d written line by line", len(lines()), len(whole), len(oneByOne))
	}
	t.Logf("NDJSON of %d bytes: %d gzipped written whole, %d written line by line", len(lines()), len(whole), len(oneByOne))

	// The first line arrives, decoded, while the handler still sleeps.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/stream", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	start := time.Now()
	sresp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	zr, err := gzip.NewReader(sresp.Body)
	if err != nil {
		t.Fatal(err)
	}
	line := make([]byte, len("first\n"))
	if _, err := io.ReadFull(zr, line); err != nil || string(line) != "first\n" || time.Since(start) > 250*time.Millisecond {
		t.Errorf("stream: %q %v after %s; want the flushed line before the handler ends", line, err, time.Since(start))
	}
	if rest, _ := io.ReadAll(zr); string(rest) != "second\n" {
		t.Errorf("stream's rest: %q", rest)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/page", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				errs <- err
				return
			}
			if b, err := io.ReadAll(zr); err != nil || string(b) != want {
				errs <- errors.Join(err, fmt.Errorf("%d bytes, not the page", len(b)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
