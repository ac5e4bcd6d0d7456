// Package static holds the console's CSS, JavaScript and vendored front-end
// libraries, embedded in the binary and served under content-hashed URLs.
//
// A page links an asset with Path("app.css"), which returns a URL such as
// /static/app.3f2a1b9c.css. Because the URL changes whenever the content does,
// Handler can tell browsers to cache every response for a year.
package static

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// Prefix is the URL path under which Handler serves assets; mount Handler there.
const Prefix = "/static/"

// ContentSecurityPolicy is the policy every page is served under (web sets it): the assets here
// are written for it — scripts and styles from this package only, no inline ones, images from it or
// data: URLs (app.css draws its icons as data: masks).
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// hashLen is the number of hex digits of the SHA-256 of an asset kept in its URL.
const hashLen = 8

//go:embed app.css app.js favicon.svg vendor/*.js vendor/*.css
var files embed.FS

// asset is one embedded file and the URL path it is served under.
type asset struct {
	name        string // path inside files, e.g. "vendor/htmx.min.js"
	url         string // e.g. "/static/vendor/htmx.min.0a1b2c3d.js"
	etag        string
	contentType string
	data        []byte
}

// manifest maps logical names and hashed URL paths to assets.
type manifest struct {
	byName map[string]*asset
	byURL  map[string]*asset
}

// load hashes every embedded file once, on first use. Reading an embed.FS
// cannot fail in practice; TestManifest proves it for the files we ship.
var load = sync.OnceValue(func() manifest {
	m, _ := buildManifest(files)
	return m
})

func buildManifest(fsys fs.FS) (manifest, error) {
	m := manifest{byName: map[string]*asset{}, byURL: map[string]*asset{}}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		sum := sha256.Sum256(data)
		h := hex.EncodeToString(sum[:])[:hashLen]
		a := &asset{
			name:        name,
			url:         Prefix + hashedName(name, h),
			etag:        `"` + h + `"`,
			contentType: contentType(name),
			data:        data,
		}
		m.byName[name] = a
		m.byURL[a.url] = a
		return nil
	})
	return m, err
}

// hashedName inserts the hash before the last extension:
// "vendor/uPlot.min.css" → "vendor/uPlot.min.<hash>.css".
func hashedName(name, hash string) string {
	ext := path.Ext(name)
	return strings.TrimSuffix(name, ext) + "." + hash + ext
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".json":
		return "application/json"
	case ".png":
		return "image/png"
	case ".woff2":
		return "font/woff2"
	default:
		return "application/octet-stream"
	}
}

// Path returns the content-hashed URL path of the embedded asset name, for
// example Path("app.css") == "/static/app.3f2a1b9c.css" and
// Path("vendor/htmx.min.js") == "/static/vendor/htmx.min.0d1e2f3a.js".
//
// For a name that is not embedded it returns Prefix+name, which Handler
// answers with 404; Names lists the valid names.
func Path(name string) string {
	if a, ok := load().byName[name]; ok {
		return a.url
	}
	return Prefix + name
}

// Names returns the logical names of all embedded assets, sorted.
func Names() []string {
	return slices.Sorted(maps.Keys(load().byName))
}

// Handler serves the embedded assets at the exact URL paths Path returns
// (it expects the full request path, so mount it at Prefix without
// stripping). Responses carry the right Content-Type, an ETag and
// "Cache-Control: public, max-age=31536000, immutable". Any other path,
// including an asset's unhashed or stale-hash name, gets 404; methods other
// than GET and HEAD get 405.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := load().byURL[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
		h.Set("ETag", a.etag)
		h.Set("X-Content-Type-Options", "nosniff")
		// ServeContent handles HEAD, Range and If-None-Match; a zero modtime
		// keeps it from sending Last-Modified, the ETag is the validator.
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.data))
	})
}
