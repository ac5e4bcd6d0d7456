package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
)

// onTheWire GETs url accepting enc (none when empty), with header, and returns the answer as it
// came: through a Transport that does not decompress on its own.
func onTheWire(t *testing.T, url, enc string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	if enc != "" {
		req.Header.Set("Accept-Encoding", enc)
	}
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// The console compresses a large answer for a client that accepts gzip, and not otherwise;
// /metrics is left to promhttp (which compresses on its own).
func TestGzipResponses(t *testing.T) {
	s := startServer(t, authYAML(t, "basic", ""))
	get := func(path, enc string) (*http.Response, []byte) {
		t.Helper()
		return onTheWire(t, s.url+path, enc, nil)
	}
	plain, plainBody := get("/api/openapi.json", "")
	if plain.Header.Get("Content-Encoding") != "" {
		t.Fatalf("compressed without Accept-Encoding: %q", plain.Header.Get("Content-Encoding"))
	}
	zipped, zippedBody := get("/api/openapi.json", "gzip, deflate, br")
	if zipped.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", zipped.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zippedBody))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if string(unzipped) != string(plainBody) || len(zippedBody)*3 > len(plainBody) {
		t.Errorf("gzip: %d bytes on the wire for %d (%d after gunzip)", len(zippedBody), len(plainBody), len(unzipped))
	}
	m, mb := get("/metrics", "gzip")
	if enc := m.Header.Get("Content-Encoding"); enc == "gzip" {
		if zr, err := gzip.NewReader(bytes.NewReader(mb)); err != nil {
			t.Fatalf("/metrics: %v", err)
		} else if b, _ := io.ReadAll(zr); len(b) > 0 && b[0] == 0x1f {
			t.Error("/metrics gzipped twice")
		}
	}
}

// The groups answer is gzipped around a part compressed once per snapshot: what a client
// unzips is byte for byte the identity answer (but the envelope's ages), and a client that does
// not accept gzip (or refuses it with q=0) gets it as it is.
func TestGroupsGzipSpliced(t *testing.T) {
	srv := groupsServer(t, bigSnapshot(20, 10))
	get := func(enc string) (*http.Response, []byte) {
		t.Helper()
		return onTheWire(t, srv.URL+"/api/v1/kafka/main/groups", enc, http.Header{"Authorization": {"Bearer tok-viewer"}})
	}
	plain, plainBody := get("")
	refused, refusedBody := get("gzip;q=0, br")
	if plain.Header.Get("Content-Encoding") != "" || refused.Header.Get("Content-Encoding") != "" || len(refusedBody) != len(plainBody) {
		t.Fatalf("identity answers: %q %q", plain.Header.Get("Content-Encoding"), refused.Header.Get("Content-Encoding"))
	}
	for range 2 { // the second read reuses the compressed groups
		zipped, zippedBody := get("br, gzip")
		if zipped.Header.Get("Content-Encoding") != "gzip" || zipped.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("headers %v", zipped.Header)
		}
		zr, err := gzip.NewReader(bytes.NewReader(zippedBody))
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		unzipped, err := io.ReadAll(zr) // checks the trailer's CRC-32 and length
		if err != nil {
			t.Fatalf("gunzip: %v", err)
		}
		_, groupsPlain, _ := bytes.Cut(plainBody, []byte(`"groups":`))
		_, groupsZipped, _ := bytes.Cut(unzipped, []byte(`"groups":`))
		if len(groupsPlain) < 1000 || !bytes.Equal(groupsPlain, groupsZipped) || len(zippedBody)*5 > len(plainBody) {
			t.Fatalf("gzip: %d bytes on the wire for %d; groups equal: %v", len(zippedBody), len(plainBody), bytes.Equal(groupsPlain, groupsZipped))
		}
	}
}

// The HTTP metrics count each request under the status the client got: the error handler writes
// an error's status after the middleware returned, so reading the response then said 200 ("OK").
func TestMetricsCountTheRealStatus(t *testing.T) {
	srv := startServer(t, "auth: {mode: none}\n")
	for _, path := range []string{"/api/v1/replays/job_nope", "/healthz"} {
		resp, err := http.Get(srv.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(srv.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var missing []string
	for _, want := range []string{`code="404",method="GET",route="/api/v1/replays/:id"`, `code="200",method="GET",route="/healthz"`} {
		if !strings.Contains(string(body), want) {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 || strings.Contains(string(body), `code="OK"`) {
		t.Fatalf("metrics lack %v (or still use status texts):\n%s", missing, grepLines(string(body), "redrive_http"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
