package static

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestManifest(t *testing.T) {
	m, err := buildManifest(files)
	if err != nil {
		t.Fatalf("buildManifest: %v", err)
	}
	for _, name := range []string{"app.css", "app.js", "favicon.svg", "vendor/htmx.min.js", "vendor/uPlot.iife.min.js", "vendor/uPlot.min.css"} {
		if _, ok := m.byName[name]; !ok {
			t.Errorf("asset %q is not embedded", name)
		}
	}
}

func TestPath(t *testing.T) {
	tests := []struct {
		name string
		want string // regexp
	}{
		{"app.css", `^/static/app\.[0-9a-f]{8}\.css$`},
		{"app.js", `^/static/app\.[0-9a-f]{8}\.js$`},
		{"vendor/htmx.min.js", `^/static/vendor/htmx\.min\.[0-9a-f]{8}\.js$`},
		{"vendor/uPlot.min.css", `^/static/vendor/uPlot\.min\.[0-9a-f]{8}\.css$`},
		{"nope.css", `^/static/nope\.css$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Path(tt.name)
			if !regexp.MustCompile(tt.want).MatchString(got) {
				t.Errorf("Path(%q) = %q, want match %s", tt.name, got, tt.want)
			}
			if again := Path(tt.name); again != got {
				t.Errorf("Path(%q) not stable: %q then %q", tt.name, got, again)
			}
		})
	}
	if Path("app.css") == Path("app.js") {
		t.Error("different assets share a URL")
	}
}

func TestHashedName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"app.css", "app.abc.css"},
		{"vendor/uPlot.iife.min.js", "vendor/uPlot.iife.min.abc.js"},
		{"LICENSE", "LICENSE.abc"},
	}
	for _, tt := range tests {
		if got := hashedName(tt.in, "abc"); got != tt.want {
			t.Errorf("hashedName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHandler(t *testing.T) {
	h := Handler()
	do := func(method, target string, hdr map[string]string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, target, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	t.Run("Served", func(t *testing.T) {
		tests := []struct {
			name, ctype, contains string
		}{
			{"app.css", "text/css; charset=utf-8", ":root"},
			{"app.js", "text/javascript; charset=utf-8", "data-rel"},
			{"vendor/htmx.min.js", "text/javascript; charset=utf-8", "htmx"},
			{"vendor/uPlot.iife.min.js", "text/javascript; charset=utf-8", "uPlot"},
			{"vendor/uPlot.min.css", "text/css; charset=utf-8", ".uplot"},
			{"favicon.svg", "image/svg+xml", "<svg"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rec := do(http.MethodGet, Path(tt.name), nil)
				if rec.Code != http.StatusOK {
					t.Fatalf("status = %d, want 200", rec.Code)
				}
				if got := rec.Header().Get("Content-Type"); got != tt.ctype {
					t.Errorf("Content-Type = %q, want %q", got, tt.ctype)
				}
				if got := rec.Header().Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
					t.Errorf("Cache-Control = %q", got)
				}
				body, _ := io.ReadAll(rec.Body)
				if !strings.Contains(string(body), tt.contains) {
					t.Errorf("body does not contain %q", tt.contains)
				}
			})
		}
	})

	t.Run("Head", func(t *testing.T) {
		rec := do(http.MethodHead, Path("app.css"), nil)
		if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
			t.Errorf("HEAD: status %d, body %d bytes", rec.Code, rec.Body.Len())
		}
	})

	t.Run("NotModified", func(t *testing.T) {
		first := do(http.MethodGet, Path("app.js"), nil)
		etag := first.Header().Get("ETag")
		if etag == "" {
			t.Fatal("no ETag")
		}
		rec := do(http.MethodGet, Path("app.js"), map[string]string{"If-None-Match": etag})
		if rec.Code != http.StatusNotModified {
			t.Errorf("status = %d, want 304", rec.Code)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		for _, target := range []string{
			"/static/app.css",          // unhashed
			"/static/app.00000000.css", // stale hash
			"/static/nope.12345678.js", // unknown
			"/static/",                 // directory
			"/static/../static/static.go",
			"/app.css",
		} {
			if rec := do(http.MethodGet, target, nil); rec.Code != http.StatusNotFound {
				t.Errorf("GET %s: status = %d, want 404", target, rec.Code)
			}
		}
	})

	t.Run("MethodNotAllowed", func(t *testing.T) {
		rec := do(http.MethodPost, Path("app.css"), nil)
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("status = %d, want 405", rec.Code)
		}
		if rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("Allow = %q", rec.Header().Get("Allow"))
		}
	})
}
