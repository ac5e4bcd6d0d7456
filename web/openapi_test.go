package web

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/access"
)

// servedOpenAPI is the document as GET /api/openapi.json serves it, parsed and validated.
func servedOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/api/openapi.json", nil), rec)
	if err := serveOpenAPI(c); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
		t.Fatalf("GET /api/openapi.json: %d %q", rec.Code, rec.Header().Get(echo.HeaderContentType))
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("not a valid OpenAPI 3 document: %v", err)
	}
	return doc
}

// openAPIPath turns echo's /a/:b into OpenAPI's /a/{b}.
func openAPIPath(echoPath string) string {
	parts := strings.Split(echoPath, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			parts[i] = "{" + name + "}"
		}
	}
	return strings.Join(parts, "/")
}

// documented says whether a route of the table belongs in the document: the JSON API, the
// document itself, and the health endpoints scripts call.
func documented(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/healthz" || path == "/readyz"
}

func TestOpenAPI(t *testing.T) {
	doc := servedOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}

	// The route table is read live: a route added to routes() must be documented in the same change.
	table := map[string]Route{}
	apiV1 := 0
	for _, r := range routes(routeHandlers{}) {
		if !documented(r.Path) {
			continue
		}
		table[r.Method+" "+openAPIPath(r.Path)] = r
		if strings.HasPrefix(r.Path, "/api/v1/") {
			apiV1++
		}
	}
	if apiV1 < 20 {
		t.Fatalf("only %d /api/v1 routes in the table", apiV1)
	}

	t.Run("EveryRouteDocumented", func(t *testing.T) {
		for key, r := range table {
			path := openAPIPath(r.Path)
			item := doc.Paths.Find(path)
			if item == nil || item.GetOperation(r.Method) == nil {
				t.Errorf("%s is registered but not in web/openapi.yaml", key)
			}
		}
	})

	t.Run("EveryDocumentedRouteExists", func(t *testing.T) {
		for path, item := range doc.Paths.Map() {
			for method := range item.Operations() {
				if _, ok := table[method+" "+path]; !ok {
					t.Errorf("%s %s is documented but not in the route table", method, path)
				}
			}
		}
	})

	t.Run("RolesMatchTheRouteTable", func(t *testing.T) {
		for key, r := range table {
			item := doc.Paths.Find(openAPIPath(r.Path))
			if item == nil || item.GetOperation(r.Method) == nil {
				continue // reported above
			}
			op := item.GetOperation(r.Method)
			role, _ := op.Extensions["x-redrive-role"].(string)
			if role != r.Role.String() {
				t.Errorf("%s: x-redrive-role %q, the route table says %q", key, role, r.Role)
			}
			public := op.Security != nil && len(*op.Security) == 0
			if public != (r.Role == access.Public) {
				t.Errorf("%s: security overridden to none: %v, but the route's role is %s", key, public, r.Role)
			}
		}
	})

	t.Run("OperationsAnswerJSON", func(t *testing.T) {
		ids := map[string]string{}
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				key := method + " " + path
				if prev, dup := ids[op.OperationID]; op.OperationID == "" || dup {
					t.Errorf("%s: operationId %q missing or also used by %s", key, op.OperationID, prev)
				}
				ids[op.OperationID] = key
				ok := op.Responses.Status(http.StatusOK)
				// A download (x-redrive-download) answers a stream: NDJSON or CSV, not JSON.
				if download, _ := op.Extensions["x-redrive-download"].(bool); download {
					if ok == nil || ok.Value.Content.Get("application/x-ndjson") == nil {
						t.Errorf("%s: a download without an application/x-ndjson 200 response", key)
					}
				} else if ok == nil || ok.Value.Content.Get(echo.MIMEApplicationJSON) == nil {
					t.Errorf("%s: no application/json 200 response", key)
				}
				if strings.HasPrefix(path, "/api/v1/") && op.Responses.Status(http.StatusUnauthorized) == nil {
					t.Errorf("%s: the 401 answer is not documented", key)
				}
				if method == http.MethodPost && op.RequestBody == nil && !strings.HasSuffix(path, "/cancel") && !strings.HasSuffix(path, "/approve") {
					t.Errorf("%s: no request body documented", key)
				}
			}
		}
	})
}

// The path parameters of each documented path are exactly the ones the echo route names.
func TestOpenAPIPathParameters(t *testing.T) {
	doc := servedOpenAPI(t)
	for _, r := range routes(routeHandlers{}) {
		if !documented(r.Path) {
			continue
		}
		path := openAPIPath(r.Path)
		item := doc.Paths.Find(path)
		if item == nil || item.GetOperation(r.Method) == nil {
			continue // TestOpenAPI reports it
		}
		var want, got []string
		for _, p := range strings.Split(r.Path, "/") {
			if name, ok := strings.CutPrefix(p, ":"); ok {
				want = append(want, name)
			}
		}
		params := append(slices.Clone(item.Parameters), item.GetOperation(r.Method).Parameters...)
		for _, p := range params {
			if p.Value.In == openapi3.ParameterInPath {
				got = append(got, p.Value.Name)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Errorf("%s %s: path parameters %v, the route has %v", r.Method, path, got, want)
		}
	}
}

func TestOpenAPIServedByTheConsole(t *testing.T) {
	s := startServer(t, authYAML(t, "basic", ""))
	resp, err := http.Get(s.url + "/api/openapi.json") // anonymous: the route is public
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	doc, err := openapi3.NewLoader().LoadFromIoReader(resp.Body)
	if err != nil || doc.Paths.Find("/api/v1/outboxes") == nil {
		t.Fatalf("served document: %v", err)
	}
}
