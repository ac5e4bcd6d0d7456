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
	"sync"
	"sync/atomic"
	"testing"
)

// StatsProxy stands between the console and the test broker's real management API and can take the queue
// statistics away as a broker does: Disabled asks every call with ?disable_stats=true, the answer
// of a broker with management.disable_stats or management_agent.disable_metrics_collector (the
// overview then says "disable_stats": true too); Unreported drops the counts, consumers and rates
// from the queue lists, the answer for a queue that has not reported yet (a new one, or a quorum
// queue in the seconds after its node restarted); Frozen answers each queue call with what it
// answered last, the statistics of a moment ago (their interval's lag, or a quorum queue whose
// leader is gone, whose last counts the management API goes on reporting).
type StatsProxy struct {
	URL                          string // the management API, as the console is to call it
	Disabled, Unreported, Frozen atomic.Bool

	mu   sync.Mutex
	last map[string][]byte // the last answer to each queue call, by its request URI
}

// NewStatsProxy is a StatsProxy of the test broker's management API, closed when tb ends.
func NewStatsProxy(tb testing.TB) *StatsProxy {
	tb.Helper()
	_, mgmtURL := Env(tb)
	target, err := url.Parse(mgmtURL)
	if err != nil {
		tb.Fatal(err)
	}
	p := &StatsProxy{last: map[string][]byte{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if !strings.HasPrefix(r.Request.URL.Path, "/api/queues") || r.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		var qs []map[string]json.RawMessage
		if p.Unreported.Load() && json.Unmarshal(body, &qs) == nil {
			for _, q := range qs {
				for _, k := range []string{"messages", "messages_ready", "messages_unacknowledged", "consumers", "message_stats", "messages_dlx"} {
					delete(q, k)
				}
			}
			body, _ = json.Marshal(qs)
		}
		p.mu.Lock()
		p.last[r.Request.URL.RequestURI()] = body
		p.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		r.Header.Del("Content-Encoding")
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Accept-Encoding")
		if p.Frozen.Load() {
			p.mu.Lock()
			body, ok := p.last[r.URL.RequestURI()]
			p.mu.Unlock()
			if ok {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
				return
			}
		}
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
