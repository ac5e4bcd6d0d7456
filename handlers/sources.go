package handlers

import (
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/payload"
)

// What the handlers of an area share about its configured sources (Kafka clusters, RabbitMQ
// brokers, outboxes): finding one by the name in the path, and the area's index.

// named is a source configured under a name.
type named interface{ Name() string }

// byName indexes the configured sources by their names.
func byName[T named](sources []T) map[string]T {
	m := make(map[string]T, len(sources))
	for _, s := range sources {
		m[s.Name()] = s
	}
	return m
}

// lookup is the source configured as name, or a 404 saying that no what ("kafka cluster") of
// that name is configured.
func lookup[T any](sources map[string]T, name, what string) (T, error) {
	s, ok := sources[name]
	if !ok {
		var none T
		return none, ops.NotFound(what+" %q is not configured", payload.Clip(name, 64))
	}
	return s, nil
}

// areaIndex answers the index of an area (GET /kafka, GET /rabbitmq): straight to its page when
// one cluster or broker is configured, else the list of their names.
func areaIndex[T named](c echo.Context, sources []T, only func(string) string, list func(names []string) templ.Component) error {
	if len(sources) == 1 {
		return c.Redirect(http.StatusFound, only(sources[0].Name()))
	}
	names := make([]string, len(sources))
	for i, s := range sources {
		names[i] = s.Name()
	}
	return render(c, http.StatusOK, list(names))
}
