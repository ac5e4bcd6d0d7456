package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// startReloadable serves the config file at path with reload on (SIGHUP and the admin API).
func startReloadable(t *testing.T, path string) string {
	t.Helper()
	load := func() (*configs.Config, error) { return configs.Load(path, func(string) string { return "" }) }
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	return serveInTest(t, cfg, load)
}

func tokenLine(name, token, role string) string {
	sum := sha256.Sum256([]byte(token))
	return fmt.Sprintf("    - {name: %s, role: %s, sha256: %s}\n", name, role, hex.EncodeToString(sum[:]))
}

// TestConfigReload: a reload through the admin API puts a new token in force and signs out a
// removed user without a restart; an invalid file is refused with the key named and the running
// config keeps serving; SIGHUP reloads too; every reload is audited.
func TestConfigReload(t *testing.T) {
	storeDSN := pgtest.NewDatabase(t)
	path := filepath.Join(t.TempDir(), "console.yaml")
	head := fmt.Sprintf("listen: 127.0.0.1:0\nstore: {dsn: %q}\n", storeDSN)
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(head+body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(basicAuth(""))
	base := startReloadable(t, path)

	vera := browserlike()
	if r := postLogin(t, vera, base, loginForm(t, vera, base), "vera", "pw-vera"); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", r.status, r.body)
	}
	if r := do(t, vera, "GET", base+"/", "", ""); r.status != http.StatusOK {
		t.Fatalf("vera before the reload: %d", r.status)
	}
	if r := bearer(t, "GET", base+"/api/v1/overview", "tok-new", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("an unknown token: %d", r.status)
	}
	if r := bearer(t, "POST", base+"/api/v1/admin/reload", "tok-operator", ""); r.status != http.StatusForbidden {
		t.Fatalf("an operator reloading: %d", r.status)
	}

	// vera removed, a new token added.
	without := strings.Replace(basicAuth(tokenLine("new-bot", "tok-new", "viewer")), `    - {name: vera, `, `    - {name: vera-gone, `, 1)
	write(without)
	r := bearer(t, "POST", base+"/api/v1/admin/reload", "tok-admin", "")
	if r.status != http.StatusOK || !strings.Contains(r.body, `"auth.users, auth.tokens, auth.proxy roles"`) || !strings.Contains(r.body, `"redaction"`) {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	if r := bearer(t, "GET", base+"/api/v1/overview", "tok-new", ""); r.status != http.StatusOK {
		t.Fatalf("the new token after the reload: %d %s", r.status, r.body)
	}
	if r := do(t, vera, "GET", base+"/", "", ""); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/login") {
		t.Fatalf("removed user after the reload: %d %s, want the login redirect", r.status, r.header.Get("Location"))
	}

	// An invalid file: refused, the key named, the running config unchanged.
	write(strings.Replace(without, "role: viewer, sha256", "role: superuser, sha256", 1))
	r = bearer(t, "POST", base+"/api/v1/admin/reload", "tok-admin", "")
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "auth.tokens[") || !strings.Contains(r.body, "running config keeps serving") {
		t.Fatalf("invalid reload: %d %s", r.status, r.body)
	}
	if r := bearer(t, "GET", base+"/api/v1/overview", "tok-new", ""); r.status != http.StatusOK {
		t.Fatalf("the running config stopped serving after a refused reload: %d", r.status)
	}
	// A mode change is refused too, whole: nothing of the file is applied.
	write(strings.Replace(without, "mode: basic", "mode: proxy\n  trusted_proxies: [10.0.0.1]", 1) + tokenLine("never-bot", "tok-never", "admin"))
	if r := bearer(t, "POST", base+"/api/v1/admin/reload", "tok-admin", ""); r.status != http.StatusBadRequest || !strings.Contains(r.body, "auth.mode") {
		t.Fatalf("mode change: %d %s", r.status, r.body)
	}
	if r := bearer(t, "GET", base+"/api/v1/overview", "tok-never", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("a refused file's token works: %d", r.status)
	}

	// SIGHUP.
	write(basicAuth(tokenLine("hup-bot", "tok-hup", "viewer")))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, 10*time.Second, "SIGHUP reloads the config (the new token is accepted)", func() bool {
		return bearer(t, "GET", base+"/api/v1/overview", "tok-hup", "").status == http.StatusOK
	})

	audit := bearer(t, "GET", base+"/api/v1/audit?action=config.reload", "tok-admin", "")
	for _, want := range []string{`"actor":"token:admin-bot"`, `"actor":"signal:SIGHUP"`, `"outcome":"failed"`, `"outcome":"ok"`} {
		if !strings.Contains(audit.body, want) {
			t.Errorf("audit of reloads lacks %s: %s", want, audit.body)
		}
	}
}

// TestConfigReloadThresholdsAndNotify: the thresholds (an outbox's stale_ready_after) and the
// notification rules and channels change without a restart. Before the reload the outbox's due
// backlog is not a problem and no rule routes it; after it, the overview lists the backlog, a
// notification about it reaches the new channel's receiver, and nothing is reported as needing
// a restart.
func TestConfigReloadThresholdsAndNotify(t *testing.T) {
	storeDSN, outboxDSN := pgtest.NewDatabase(t), seededOutbox(t)
	got := make(chan string, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.URL.Path + " " + string(b)
	}))
	t.Cleanup(receiver.Close)
	path := filepath.Join(t.TempDir(), "console.yaml")
	write := func(staleAfter, channel, kind string) {
		t.Helper()
		body := fmt.Sprintf(`listen: 127.0.0.1:0
auth: {mode: none}
store: {dsn: %q}
outboxes: [{name: orders, dsn: %q, stale_ready_after: %s}]
notify:
  interval: 1s
  channels: [{name: %s, type: webhook, url: %q}]
  rules: [{match: {kind: %s}, channels: [%s]}]
`, storeDSN, outboxDSN, staleAfter, channel, receiver.URL+"/"+channel, kind, channel)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("1000h", "hook-a", "replay_failed")
	base := startReloadable(t, path)
	backlog := func() bool {
		o := decode[struct {
			Problems []struct{ Kind string } `json:"problems"`
		}](t, do(t, nil, "GET", base+"/api/v1/overview", "", ""))
		for _, p := range o.Problems {
			if p.Kind == "outbox_backlog" {
				return true
			}
		}
		return false
	}
	if backlog() {
		t.Fatal("a backlog younger than stale_ready_after is a problem before the reload")
	}

	write("1s", "hook-b", "outbox_backlog")
	r := do(t, nil, "POST", base+"/api/v1/admin/reload", "", "")
	res := decode[struct {
		Applied       []string `json:"applied"`
		RestartNeeded []string `json:"restart_needed"`
	}](t, r)
	if r.status != http.StatusOK || len(res.RestartNeeded) != 0 || !strings.Contains(r.body, `"notify"`) || !strings.Contains(r.body, "stale_ready_after") {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	if !backlog() {
		t.Fatal("the lowered stale_ready_after is not in force after the reload")
	}
	select {
	case m := <-got:
		if !strings.HasPrefix(m, "/hook-b ") || !strings.Contains(m, `"kind":"outbox_backlog"`) || !strings.Contains(m, `"state":"firing"`) {
			t.Fatalf("the receiver got %s", m)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no notification through the reloaded rule and channel")
	}
	list := do(t, nil, "GET", base+"/api/v1/notifications", "", "")
	if !strings.Contains(list.body, `"channels":["hook-b"]`) {
		t.Fatalf("the notifications API after the reload: %s", list.body)
	}
}
