package web

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"
	"gopkg.in/yaml.v3"
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
