package main

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/waittest"
)

// A request body trickled a byte every 2 s is cut at request_timeout: the connection does not
// stay open (and hold a goroutine) for as long as the client likes.
func TestTrickledBodyIsCut(t *testing.T) {
	base, _ := demoConsoleWith(t, "request_timeout: 3s\n")
	addr := strings.TrimPrefix(base, "http://")
	for _, path := range []string{"/api/v1/replays/plan", "/outboxes/orders/release"} {
		t.Run(path, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctype := "application/json"
			if !strings.HasPrefix(path, "/api/") {
				ctype = "application/x-www-form-urlencoded"
			}
			start := time.Now()
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: 1000\r\n\r\n", path, addr, ctype)
			closed := make(chan time.Duration, 1)
			go func() {
				buf := make([]byte, 4096)
				for {
					if _, err := conn.Read(buf); err != nil {
						closed <- time.Since(start)
						return
					}
				}
			}()
			tick := time.NewTicker(2 * time.Second)
			defer tick.Stop()
			for {
				select {
				case d := <-closed:
					t.Logf("trickled body to %s: connection closed after %s (request_timeout 3s)", path, d.Round(100*time.Millisecond))
					if d > 5*time.Second {
						t.Fatalf("closed after %s; want within request_timeout (3s) + 2s", d)
					}
					return
				case <-tick.C:
					if time.Since(start) > 20*time.Second {
						t.Fatal("the connection is still open after 20s")
					}
					_, _ = conn.Write([]byte("{"))
				}
			}
		})
	}
}

// demoConsoleWith is demoConsole with extra top-level YAML.
func demoConsoleWith(t *testing.T, extra string) (base, outboxDSN string) {
	t.Helper()
	return outboxConsole(t, "auth: {mode: none}\n"+extra)
}

// A frozen store (its PostgreSQL stopped with SIGSTOP: connections open, nothing answers) makes
// no page or API call wait past request_timeout; the overview's other panels still show.
func TestFrozenStoreAnswersWithinRequestTimeout(t *testing.T) {
	pg := privatePostgres(t)
	outboxDSN := seededOutbox(t)
	const timeout = 3 * time.Second
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
request_timeout: 3s
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q}]
`, pg.DSN("postgres"), outboxDSN))
	paths := []string{"/", "/outboxes", "/outboxes/orders", "/audit", "/api/v1/overview", "/api/v1/outboxes",
		"/api/v1/audit", "/api/v1/replays", "/readyz"}
	for _, p := range paths { // warm: every pool has its connections
		if r := do(t, nil, "GET", base+p, "", ""); r.status >= 500 {
			t.Fatalf("%s before: %d %s", p, r.status, r.body)
		}
	}

	pids := pg.Processes()
	if len(pids) == 0 {
		t.Fatal("the private PostgreSQL has no processes")
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	thawed := false
	thaw := func() {
		if !thawed {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
			thawed = true
		}
	}
	t.Cleanup(thaw)

	client := &http.Client{Timeout: 30 * time.Second}
	for _, p := range paths {
		start := time.Now()
		r := do(t, client, "GET", base+p, "", "")
		took := time.Since(start)
		t.Logf("%s with the store frozen: %d after %s: %.300s", p, r.status, took.Round(10*time.Millisecond), errorText(r.body))
		if took > timeout+time.Second {
			t.Errorf("%s answered after %s; want within request_timeout (%s) + 1s", p, took, timeout)
		}
		if r.status == http.StatusInternalServerError {
			t.Errorf("%s: 500 %s", p, r.body)
		}
	}
	// The overview still shows the outbox, which lives in another database.
	r := do(t, client, "GET", base+"/api/v1/overview", "", "")
	if !strings.Contains(r.body, "Outbox orders: 25 DEAD") {
		t.Errorf("the overview's outbox panel waited for the store: %s", r.body)
	}

	thaw()
	waittest.Until(t, 20*time.Second, "the console ready again after the store thawed", func() bool {
		return do(t, client, "GET", base+"/readyz", "", "").status == http.StatusOK
	})
}

// errorText is the message of an error page or JSON error, for the log.
func errorText(body string) string {
	if i := strings.Index(body, `data-testid="error-message"`); i >= 0 {
		return body[i:min(len(body), i+300)]
	}
	if strings.HasPrefix(body, "{") {
		return body
	}
	return ""
}
