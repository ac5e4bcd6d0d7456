package web

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/paths"
)

var routeParam = regexp.MustCompile(`:[a-z]+`)

// The route table as registered, with its methods, routes a link to each of its routes back to
// that route, and the handlers read the names it was made of: awkward names in every parameter,
// escaped the way paths escapes them (paths' own tests prove each builder writes its pattern).
func TestRouteTableRoutesPathsLinksBack(t *testing.T) {
	table := append(routes(routeHandlers{}), authRoutes(nil)...)
	e := echo.New()
	var got struct {
		method, path string
		params       []string
	}
	for _, r := range table {
		e.Add(r.Method, r.Path, func(c echo.Context) error {
			got.method, got.path, got.params = c.Request().Method, c.Path(), nil
			for _, n := range c.ParamNames() {
				got.params = append(got.params, handlers.PathParam(c, n))
			}
			return c.NoContent(http.StatusNoContent)
		})
	}
	names := []string{"/", "shop/eu", "a b#?%", "orders.DLT", "..", "évé"}
	for _, r := range table {
		for k := range names {
			var want []string
			u := routeParam.ReplaceAllStringFunc(r.Path, func(string) string {
				v := names[(k+len(want))%len(names)] // each parameter a different name
				want = append(want, v)
				return paths.Segment(v)
			})
			got.method, got.path, got.params = "", "", nil
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(r.Method, u, nil))
			if rec.Code != http.StatusNoContent || got.method != r.Method || got.path != r.Path ||
				strings.Join(got.params, "\x00") != strings.Join(want, "\x00") {
				t.Errorf("%s %s: routed to %s %s with %q (status %d); want %s with %q",
					r.Method, u, got.method, got.path, got.params, rec.Code, r.Path, want)
			}
		}
	}
}
