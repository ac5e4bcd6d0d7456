//go:build gallery

// The gallery renders the layout and every component on one page, serves it
// with the production CSP next to the real assets, and screenshots it with
// headless Chromium, so a person can look at the result:
//
//	go test -tags gallery -run Gallery ./views/components/ -v
//
// It writes /tmp/gallery/index.html (+ assets; open it with file://, though
// charts and htmx need the server), /tmp/g.png (1280×900), /tmp/g-full.png
// (whole page) and /tmp/g-error.png (the 404 page). It fails if Chromium
// logs a Content Security Policy violation or an uncaught script error.
package components_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/static"
)

func TestGallery(t *testing.T) {
	g := newGallery(t)

	// File version: assets next to the HTML, referenced relatively.
	dir := "/tmp/gallery"
	for _, name := range static.Names() {
		u := static.Path(name)
		rec := httptest.NewRecorder()
		static.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		dst := filepath.Join(dir, strings.TrimPrefix(u, "/"))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, rec.Body.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rel := bytes.ReplaceAll(g.page, []byte(`"/static/`), []byte(`"static/`))
	if err := os.WriteFile(filepath.Join(dir, "index.html"), rel, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s/index.html", dir)

	shots := []struct{ path, out, size string }{
		{"/", "/tmp/g.png", "1280,900"},
		{"/", "/tmp/g-full.png", "1280,2400"},
		{"/error", "/tmp/g-error.png", "1280,700"},
	}
	for _, s := range shots {
		out := screenshot(t, g.srv.URL+s.path, s.out, s.size)
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, ":CONSOLE") {
				t.Log(line)
			}
			if strings.Contains(line, "Content Security Policy") || strings.Contains(line, "Uncaught") {
				t.Errorf("browser problem on %s: %s", s.path, line)
			}
		}
		t.Logf("screenshot %s", s.out)
	}
}

func screenshot(t *testing.T, url, out, size string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--hide-scrollbars", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=4000",
		"--user-data-dir="+t.TempDir(), "--screenshot="+out, "--window-size="+size, url)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, b)
	}
	return string(b)
}
