package web

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
	"gopkg.in/yaml.v3"

	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/paths"
)

// openAPIYAML is the API's OpenAPI 3 document. It is written in YAML, where anchors keep the
// shared property lists in one place, and served as JSON.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// openAPIJSON converts the embedded document once; the tests prove the conversion succeeds.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml as JSON: %w", err)
	}
	return b, nil
})

// serveOpenAPI: GET /api/openapi.json — the same for every deployment (no config in it).
func serveOpenAPI(c echo.Context) error {
	b, err := openAPIJSON()
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return c.JSONBlob(http.StatusOK, b)
}

// openAPIParameter is a parameter of the document, or a reference to one of its components.
type openAPIParameter struct {
	Ref  string `yaml:"$ref"`
	Name string `yaml:"name"`
	In   string `yaml:"in"`
}

type openAPIOperation struct {
	Parameters []openAPIParameter `yaml:"parameters"`
}

// documentedQuery is, for each GET operation of the document by its route as echo writes it
// (/api/v1/outboxes/:name/events), the query parameters it lists, the path's own and the
// operation's, in the document's order: the one declaration of what a route reads, which
// onlyDocumentedQuery holds requests to.
var documentedQuery = sync.OnceValues(func() (map[string][]string, error) {
	var doc struct {
		Paths map[string]struct {
			Parameters []openAPIParameter `yaml:"parameters"`
			Get        *openAPIOperation  `yaml:"get"`
		} `yaml:"paths"`
		Components struct {
			Parameters map[string]openAPIParameter `yaml:"parameters"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	out := map[string][]string{}
	for path, item := range doc.Paths {
		if item.Get == nil {
			continue
		}
		names := []string{}
		for _, p := range append(slices.Clone(item.Parameters), item.Get.Parameters...) {
			if p.Ref != "" {
				ref, ok := doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
				if !ok {
					return nil, fmt.Errorf("openapi.yaml: GET %s: no parameter %s", path, p.Ref)
				}
				p = ref
			}
			if p.In == "query" {
				names = append(names, p.Name)
			}
		}
		out[echoPath(path)] = names
	}
	return out, nil
})

// echoPath turns OpenAPI's /a/{b} into echo's /a/:b.
func echoPath(openAPIPath string) string {
	parts := strings.Split(openAPIPath, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, "{"); ok {
			parts[i] = ":" + strings.TrimSuffix(name, "}")
		}
	}
	return strings.Join(parts, "/")
}

// onlyDocumentedQuery refuses, naming it, a query parameter that the document does not list for
// a GET route of the JSON API (handlers.OnlyParams): a misspelt filter (?statuss=DEAD) was
// ignored, and the answer listed everything, which reads as the filter's result. Other routes, the
// pages among them (browsers and bookmarks add parameters), are left as they are.
func onlyDocumentedQuery(r Route) (echo.HandlerFunc, error) {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || !strings.HasPrefix(r.Path, paths.APIPrefix+"v1/") {
		return r.Handler, nil
	}
	byRoute, err := documentedQuery()
	if err != nil {
		return nil, err
	}
	known, ok := byRoute[r.Path]
	if !ok {
		return nil, fmt.Errorf("%s %s is not in web/openapi.yaml: document the route and its query parameters", r.Method, r.Path)
	}
	next := r.Handler
	return func(c echo.Context) error {
		if err := handlers.OnlyParams(c, known); err != nil {
			return err
		}
		return next(c)
	}, nil
}
