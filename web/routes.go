package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/handlers"
)

// Route is one entry of the route table.
type Route struct {
	Method  string
	Path    string
	Handler echo.HandlerFunc
}

type routeHandlers struct {
	outboxes *handlers.Outboxes
	audit    *handlers.Audit
	health   *handlers.Health
	overview *handlers.Overview
	kafka    *handlers.Kafka
}

// routes is the whole route table of the console, pages and API side by side.
func routes(h routeHandlers) []Route {
	return []Route{
		{http.MethodGet, "/healthz", h.health.Healthz},
		{http.MethodGet, "/readyz", h.health.Readyz},

		{http.MethodGet, "/", h.overview.Page},
		{http.MethodGet, "/outboxes", h.outboxes.Index},
		{http.MethodGet, "/outboxes/:name", h.outboxes.Show},
		{http.MethodGet, "/outboxes/:name/panel", h.outboxes.Panel},
		{http.MethodGet, "/outboxes/:name/events/:id", h.outboxes.EventPage},
		{http.MethodPost, "/outboxes/:name/release", h.outboxes.FormRelease},
		{http.MethodPost, "/outboxes/:name/requeue", h.outboxes.FormRequeue},
		{http.MethodGet, "/audit", h.audit.Page},
		{http.MethodGet, "/kafka", h.kafka.Index},
		{http.MethodGet, "/kafka/:cluster", h.kafka.Cluster},
		{http.MethodGet, "/kafka/:cluster/groups/:group", h.kafka.GroupPage},
		{http.MethodGet, "/kafka/:cluster/topics/:topic", h.kafka.TopicPage},
		{http.MethodGet, "/kafka/:cluster/topics/:topic/errors", h.kafka.ErrorsPage},

		{http.MethodGet, "/api/v1/outboxes", h.outboxes.APIList},
		{http.MethodGet, "/api/v1/outboxes/:name", h.outboxes.APIOne},
		{http.MethodGet, "/api/v1/outboxes/:name/events", h.outboxes.APIEvents},
		{http.MethodGet, "/api/v1/outboxes/:name/events/:id", h.outboxes.APIEvent},
		{http.MethodPost, "/api/v1/outboxes/:name/leases/release", h.outboxes.APIRelease},
		{http.MethodPost, "/api/v1/outboxes/:name/events/requeue", h.outboxes.APIRequeue},
		{http.MethodGet, "/api/v1/audit", h.audit.API},
		{http.MethodGet, "/api/v1/overview", h.overview.API},
		{http.MethodGet, "/api/v1/kafka/:cluster/groups", h.kafka.APIGroups},
		{http.MethodGet, "/api/v1/kafka/:cluster/groups/:group", h.kafka.APIGroup},
		{http.MethodGet, "/api/v1/kafka/:cluster/groups/:group/history", h.kafka.APIGroupHistory},
		{http.MethodGet, "/api/v1/kafka/:cluster/dead-letter-topics", h.kafka.APIDeadLetterTopics},
		{http.MethodGet, "/api/v1/kafka/:cluster/topics/:topic/records", h.kafka.APIRecords},
		{http.MethodGet, "/api/v1/kafka/:cluster/topics/:topic/error-groups", h.kafka.APIErrorGroups},
	}
}
