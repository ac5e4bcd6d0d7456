package rabbittest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// StatsProxy stands between the console and the test broker's real management API and can take the queue
// statistics away as a broker does: Disabled asks every call with ?disable_stats=true, the answer
// of a broker with management.disable_stats or management_agent.disable_metrics_collector (the
// overview then says "disable_stats": true too); Unreported drops the counts, consumers and rates
// from the queue lists, the answer for a queue that has not reported yet (a new one, or a quorum
// queue in the seconds after its node restarted).
type StatsProxy struct {
	URL                  string // the management API, as the console is to call it
	Disabled, Unreported atomic.Bool
}

func NewStatsProxy(tb testing.TB) *StatsProxy {
	tb.Helper()
	_, mgmtURL := Env(tb)
	target, err := url.Parse(mgmtURL)
	if err != nil {
		tb.Fatal(err)
	}
	p := &StatsProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if !p.Unreported.Load() || !strings.HasPrefix(r.Request.URL.Path, "/api/queues") || r.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		var qs []map[string]json.RawMessage
		if json.Unmarshal(body, &qs) == nil {
			for _, q := range qs {
				for _, k := range []string{"messages", "messages_ready", "messages_unacknowledged", "consumers", "message_stats", "messages_dlx"} {
					delete(q, k)
				}
			}
			body, _ = json.Marshal(qs)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		r.Header.Del("Content-Encoding")
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Accept-Encoding")
		if p.Disabled.Load() {
			q := r.URL.Query()
			q.Set("disable_stats", "true")
			r.URL.RawQuery = q.Encode()
		}
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}
