package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/redrive/redrive/configs"
)

// Every GET route of the JSON API refuses a query parameter that openapi.yaml does not list for
// it, naming it and the known ones: ?statuss=DEAD was ignored and the events listed unfiltered,
// which read as the filter's answer. The parameters it lists are not refused as unknown; the pages
// are left alone (browsers and bookmarks add parameters).
func TestUnknownQueryParameterIs400(t *testing.T) {
	s := startServer(t, authYAML(t, configs.AuthNone, ""))
	cl := anonymousCaller()
	byRoute, err := documentedQuery()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range apiRoutes() {
		if r.Method != http.MethodGet {
			continue
		}
		n++
		path := strings.NewReplacer(":name", "nope", ":id", "nope", ":cluster", "nope", ":group", "nope", ":topic", "nope",
			":broker", "nope", ":vhost", "nope", ":queue", "nope").Replace(r.Path)
		status, _, body := cl.do(t, "GET", s.url+path+"?statuss=DEAD", "", "")
		if status != http.StatusBadRequest || !strings.Contains(body, "statuss: unknown query parameter") {
			t.Errorf("GET %s?statuss=DEAD: %d %.300s; want 400 naming statuss", r.Path, status, body)
		}
		for _, known := range byRoute[r.Path] {
			if _, _, body := cl.do(t, "GET", s.url+path+"?"+known+"=x", "", ""); strings.Contains(body, "unknown query parameter") {
				t.Errorf("GET %s?%s=x: %s; the document lists %s", r.Path, known, body, known)
			}
		}
	}
	if n < 25 {
		t.Fatalf("only %d GET API routes", n)
	}
	status, _, body := cl.do(t, "GET", s.url+"/api/v1/outboxes/nope/events?statuss=DEAD&limit=5", "", "")
	if want := "statuss: unknown query parameter; known: status, key, event_type, aggregate_id, stuck, created_from, created_to, limit, cursor"; status != http.StatusBadRequest || !strings.Contains(body, want) {
		t.Errorf("%d %s; want %q", status, body, want)
	}
	if status, _, body := cl.do(t, "GET", s.url+"/api/v1/overview?x=1", "", ""); status != http.StatusBadRequest || !strings.Contains(body, "x: unknown query parameter; this one takes none") {
		t.Errorf("a route without parameters: %d %s", status, body)
	}
	if status, _, body := cl.do(t, "GET", s.url+"/api/v1/overview?"+strings.Repeat("z", 5000)+"=1", "", ""); status != http.StatusBadRequest || len(body) > 1024 {
		t.Errorf("a 5000-character name: %d %.200s (%d bytes); want a 400 quoting it cut", status, body, len(body))
	}
	if status, _, body := cl.do(t, "GET", s.url+"/outboxes?statuss=DEAD&utm_source=x", "", ""); status != http.StatusOK {
		t.Errorf("a page with a parameter it does not read: %d %.300s; want it shown", status, body)
	}
}
