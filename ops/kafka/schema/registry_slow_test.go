package schema_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka/schema"
	"github.com/redrive/redrive/ops/waittest"
)

// slowRegistry is an srfake registry behind a proxy that holds every request for delay and
// counts them by path, as a registry under load (or far away) would answer.
type slowRegistry struct {
	reg  *srfake.Registry
	url  string
	mu   sync.Mutex
	hits map[string]int
}

func newSlowRegistry(t *testing.T, delay time.Duration) *slowRegistry {
	t.Helper()
	s := &slowRegistry{reg: srfake.New(), hits: map[string]int{}}
	target, err := url.Parse(s.reg.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		case <-stop:
			http.Error(w, "closing", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(stop); srv.Close(); s.reg.Close() })
	s.url = srv.URL
	return s
}

// calls is how many requests reached the proxy in all, and the most any one path had.
func (s *slowRegistry) calls() (total, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.hits {
		total += n
		most = max(most, n)
	}
	return total, most
}

// registerSignups registers n distinct JSON schemas and returns a framed value for each.
func (s *slowRegistry) registerSignups(t *testing.T, n int) (ids []int, values [][]byte) {
	t.Helper()
	for i := range n {
		id, _, err := s.reg.RegisterSchema(fmt.Sprintf("signup%d-value", i), sr.Schema{Type: sr.TypeJSON,
			Schema: fmt.Sprintf(`{"title":"acme.Signup%d","type":"object"}`, i)})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, id, nil)
		ids, values = append(ids, id), append(values, append(b, fmt.Sprintf(`{"n":%d}`, i)...))
	}
	return ids, values
}

// decoder is a Decoder with o that asks the registry through the slow proxy.
func (s *slowRegistry) decoder(t *testing.T, o schema.Options) *schema.Decoder {
	t.Helper()
	o.Registry = &configs.SchemaRegistry{URL: s.url}
	d, err := schema.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// page decodes values one after another, as a records page does.
func page(d *schema.Decoder, values [][]byte) []*schema.Decoded {
	out := make([]*schema.Decoded, len(values))
	for i, v := range values {
		out[i] = d.Decode(context.Background(), "signups", false, v)
	}
	return out
}

var schemaMention = regexp.MustCompile(`schema \d+`)

// A records page of 20 values under 20 schema ids the console has not seen, behind a registry that
// takes 3 s per request: the page waited for each id in turn, two requests each (120 s), and the
// request timed out as if Kafka had not answered. It now answers within about one registry timeout
// (5 s), shows what it could not decode yet raw with a note naming the registry and the one id,
// and the ids are fetched meanwhile, each once, so a later page decodes them all.
func TestSlowRegistryPageAnswersWithinATimeout(t *testing.T) {
	reg := newSlowRegistry(t, 3*time.Second)
	ids, values := reg.registerSignups(t, 20)
	d := reg.decoder(t, schema.Options{Timeout: 5 * time.Second})
	done := make(chan []*schema.Decoded, 1)
	start := time.Now()
	go func() { done <- page(d, values) }()
	var got []*schema.Decoded
	select {
	case got = <-done:
	case <-time.After(8 * time.Second):
		t.Fatalf("a page of 20 unknown ids behind a 3 s registry did not answer within 8 s")
	}
	took := time.Since(start)
	t.Logf("cold page of 20 ids behind a 3 s registry: %s", took.Round(10*time.Millisecond))
	if took > 6500*time.Millisecond {
		t.Errorf("the page took %s, more than about one registry timeout (5 s)", took)
	}
	raw := 0
	for i, g := range got {
		if g == nil || g.ID != ids[i] {
			t.Fatalf("value %d: %+v", i, g)
		}
		if g.JSON != nil {
			continue
		}
		raw++
		if m := schemaMention.FindAllString(g.Error, -1); len(m) != 1 || m[0] != fmt.Sprintf("schema %d", ids[i]) ||
			!strings.Contains(g.Error, "schema registry") || strings.Contains(strings.ToLower(g.Error), "kafka") {
			t.Errorf("value %d's note: %q", i, g.Error)
		}
	}
	if raw == 0 {
		t.Errorf("every id decoded within the page: the registry was not slow enough to test anything")
	}
	waittest.Until(t, 30*time.Second, "every id fetched in the background and decoded", func() bool {
		for _, g := range page(d, values) {
			if g.JSON == nil {
				return false
			}
		}
		return true
	})
	if total, most := reg.calls(); most != 1 || total > 2*len(ids) {
		t.Errorf("%d registry requests, one path asked %d times; want each path once, at most 2 per id", total, most)
	}
}

// Twenty pages at once over the same 20 unknown ids share each id's look-up: the registry is
// asked once per id (and once for its subject), however many pages wait for it.
func TestConcurrentPagesShareLookups(t *testing.T) {
	reg := newSlowRegistry(t, 300*time.Millisecond)
	ids, values := reg.registerSignups(t, 20)
	d := reg.decoder(t, schema.Options{Timeout: 5 * time.Second})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			waittest.Until(t, 30*time.Second, "a page decoded whole", func() bool {
				for _, g := range page(d, values) {
					if g.JSON == nil {
						return false
					}
				}
				return true
			})
		})
	}
	wg.Wait()
	total, most := reg.calls()
	t.Logf("20 concurrent pages of 20 unknown ids: %d registry requests", total)
	if most != 1 || total > 2*len(ids) {
		t.Errorf("%d registry requests, one path asked %d times; want each path once, at most 2 per id", total, most)
	}
}

// A registry answering 503: the note for the id that found out, and for another id asked during
// the back-off, names that id once and the registry's answer, the way a person would say it (it
// was "schema 99999: schema 4: schema registry unavailable: unavailable (shown raw; retrying in
// 3s)": another id's failure, "unavailable" twice, and "shown raw" that the page says again).
func TestRegistryDownNoteNamesTheID(t *testing.T) {
	reg := srfake.New()
	t.Cleanup(reg.Close)
	reg.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	d, err := schema.New(schema.Options{Registry: &configs.SchemaRegistry{URL: reg.URL()}, Retry: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	frame := func(id int) []byte {
		b, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, id, nil)
		return append(b, `{}`...)
	}
	first := d.Decode(context.Background(), "signups", false, frame(4))
	want := regexp.MustCompile(`^schema 4: the schema registry is unavailable \(it answered HTTP 503\); asking it again in (1 min|59 s)$`)
	if first == nil || first.JSON != nil || !want.MatchString(first.Error) {
		t.Errorf("the id that found the registry down: %+v", first)
	}
	other := d.Decode(context.Background(), "signups", false, frame(99999))
	want = regexp.MustCompile(`^schema 99999: the schema registry is unavailable \(it answered HTTP 503\); asking it again in (1 min|59 s)$`)
	if other == nil || other.JSON != nil || !want.MatchString(other.Error) {
		t.Errorf("another id during the back-off: %+v", other)
	}
}

// A registry slower than Timeout: the read gives up waiting within Timeout, and once the request
// has failed the note says the registry did not answer in time, in the page's units.
func TestRegistryTimeoutNote(t *testing.T) {
	reg := newSlowRegistry(t, 2*time.Second)
	ids, values := reg.registerSignups(t, 1)
	d := reg.decoder(t, schema.Options{Timeout: 300 * time.Millisecond, Retry: time.Minute})
	start := time.Now()
	got := page(d, values)[0]
	// The read waits as long as the request may take: it finds the registry slow or, at the same
	// moment, the request failed.
	slow := fmt.Sprintf("schema %d: the schema registry is slow to answer; it is still being asked", ids[0])
	want := fmt.Sprintf("schema %d: the schema registry is unavailable (no answer within 300 ms); asking it again in", ids[0])
	if took := time.Since(start); took > time.Second || got.JSON != nil || got.Error != slow && !strings.HasPrefix(got.Error, want) {
		t.Errorf("after %s: %+v", took, got)
	}
	waittest.For(t, 5*time.Second, "the timed-out request's note", func() (string, bool) {
		e := page(d, values)[0].Error
		return e, strings.HasPrefix(e, want)
	})
}

// A replay plan reads every value's message id and no page waits on it: under WaitForRegistry a
// read waits for each id as long as its look-up takes, even after pages have spent what they may
// wait, so no record is planned without its id because the registry was slow.
func TestWaitForRegistryDecodesEveryID(t *testing.T) {
	reg := newSlowRegistry(t, time.Second)
	_, values := reg.registerSignups(t, 3)
	d := reg.decoder(t, schema.Options{Timeout: 1500 * time.Millisecond})
	// A page spends the allowance on the first id and shows the second raw.
	if got := page(d, values[:2]); got[0].JSON == nil || got[1].JSON != nil {
		t.Fatalf("page: %+v %+v", got[0], got[1])
	}
	ctx := schema.WaitForRegistry(context.Background())
	for i, v := range values {
		if got := d.Decode(ctx, "signups", false, v); got == nil || got.JSON == nil {
			t.Errorf("value %d: %+v", i, got)
		}
	}
}
