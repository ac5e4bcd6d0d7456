package web

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// BenchmarkCompressBurst serves a burst of 20 simultaneous requests for a 500-row page to
// clients that accept gzip, through compress (stateless gzhttp) and, in the same run, through
// echo's Gzip middleware at level 5 (what the console used before): B/op is what a burst
// allocates, ns/op how long it takes. warm: bursts back to back, so echo's pool of writers is
// full; cold: two collections before each burst (untimed), which empty a sync.Pool, as the
// collections between a console's real bursts do.
//
//	go test ./web -run '^$' -bench CompressBurst -benchmem -count 5
func BenchmarkCompressBurst(b *testing.B) {
	big := page(500)
	for _, side := range []struct {
		name string
		mw   echo.MiddlewareFunc
	}{
		{"stateless", compress(func(echo.Context) bool { return false })},
		{"echo-gzip-5", middleware.GzipWithConfig(middleware.GzipConfig{Level: 5, MinLength: compressMinSize})},
	} {
		for _, cold := range []bool{false, true} {
			name := side.name + "/warm"
			if cold {
				name = side.name + "/cold"
			}
			b.Run(name, func(b *testing.B) {
				e := echo.New()
				e.Use(side.mw)
				e.GET("/page", func(c echo.Context) error { return c.HTMLBlob(http.StatusOK, big) })
				var size int
				b.ReportAllocs()
				for b.Loop() {
					if cold {
						b.StopTimer()
						runtime.GC()
						runtime.GC()
						b.StartTimer()
					}
					var wg sync.WaitGroup
					for range 20 {
						wg.Go(func() {
							req := httptest.NewRequest(http.MethodGet, "/page", nil)
							req.Header.Set("Accept-Encoding", "gzip")
							rec := httptest.NewRecorder()
							e.ServeHTTP(rec, req)
							if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "gzip" {
								b.Errorf("%d %v", rec.Code, rec.Header())
							}
							size = rec.Body.Len()
						})
					}
					wg.Wait()
				}
				b.ReportMetric(float64(len(big)), "page-bytes")
				b.ReportMetric(float64(size), "gzipped-bytes")
			})
		}
	}
}
