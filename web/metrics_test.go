package web

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

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
