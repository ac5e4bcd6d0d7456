package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/handlers"
)

// Route is one entry of the route table: who may call it is part of the route, so that the
// authorization of every route can be read, and tested, in one place.
type Route struct {
	Method  string
	Path    string
	Handler echo.HandlerFunc
	Role    Role // the least role allowed; RolePublic needs no identity
}

// Role is an access level; each includes the ones below it.
type Role int

// Roles, lowest first.
const (
	RolePublic   Role = iota // health, readiness, metrics, static assets, the login page
	RoleViewer               // read everything (payloads redacted where configured)
	RoleOperator             // release leases, requeue outbox events, plan and run replays
	RoleAdmin                // force replays, larger jobs, cancel anyone's job, unredacted payloads
)

type routeHandlers struct {
	outboxes *handlers.Outboxes
	audit    *handlers.Audit
	health   *handlers.Health
	overview *handlers.Overview
	kafka    *handlers.Kafka
	rabbit   *handlers.Rabbit
	replays  *handlers.Replays
	replicas *handlers.Replicas
	offsets  *handlers.Offsets
	doctor   *handlers.Doctor
	reload   *Reloader
	search   *handlers.Search
	notify   *handlers.Notifications
}

// routes is the whole route table of the console, pages and API side by side.
func routes(h routeHandlers) []Route {
	return []Route{
		{http.MethodGet, "/healthz", h.health.Healthz, RolePublic},
		{http.MethodGet, "/readyz", h.health.Readyz, RolePublic},
		// Public: the document holds no data and no configuration, only what the source publishes.
		{http.MethodGet, "/api/openapi.json", serveOpenAPI, RolePublic},

		{http.MethodGet, "/", h.overview.Page, RoleViewer},
		{http.MethodGet, "/outboxes", h.outboxes.Index, RoleViewer},
		{http.MethodGet, "/outboxes/:name", h.outboxes.Show, RoleViewer},
		{http.MethodGet, "/outboxes/:name/panel", h.outboxes.Panel, RoleViewer},
		{http.MethodGet, "/outboxes/:name/events/:id", h.outboxes.EventPage, RoleViewer},
		{http.MethodPost, "/outboxes/:name/release", h.outboxes.FormRelease, RoleOperator},
		{http.MethodPost, "/outboxes/:name/requeue", h.outboxes.FormRequeue, RoleOperator},
		{http.MethodGet, "/audit", h.audit.Page, RoleViewer},
		{http.MethodGet, "/notifications", h.notify.Page, RoleViewer},
		{http.MethodPost, "/notifications/silences", h.notify.FormSilence, RoleOperator},
		{http.MethodPost, "/notifications/channels/:name/test", h.notify.FormTest, RoleOperator},
		{http.MethodGet, "/doctor", h.doctor.Page, RoleAdmin},
		{http.MethodGet, "/kafka", h.kafka.Index, RoleViewer},
		{http.MethodGet, "/kafka/:cluster", h.kafka.Cluster, RoleViewer},
		{http.MethodGet, "/kafka/:cluster/groups/:group", h.kafka.GroupPage, RoleViewer},
		{http.MethodPost, "/kafka/:cluster/groups/:group/offsets/plan", h.offsets.FormPlan, RoleOperator},
		{http.MethodPost, "/kafka/:cluster/groups/:group/offsets/apply", h.offsets.FormApply, RoleOperator},
		{http.MethodPost, "/kafka/:cluster/groups/:group/offsets/approve", h.offsets.FormApprove, RoleOperator},
		{http.MethodGet, "/kafka/:cluster/groups/:group/offsets/:id", h.offsets.PlanPage, RoleViewer},
		{http.MethodGet, "/kafka/:cluster/topics/:topic", h.kafka.TopicPage, RoleViewer},
		{http.MethodGet, "/kafka/:cluster/topics/:topic/errors", h.kafka.ErrorsPage, RoleViewer},
		{http.MethodGet, "/rabbitmq", h.rabbit.Index, RoleViewer},
		{http.MethodGet, "/rabbitmq/:broker", h.rabbit.BrokerPage, RoleViewer},
		{http.MethodGet, "/rabbitmq/:broker/queues/:vhost/:queue", h.rabbit.QueuePage, RoleViewer},
		{http.MethodGet, "/rabbitmq/:broker/queues/:vhost/:queue/messages", h.rabbit.MessagesPage, RoleViewer},
		{http.MethodGet, "/replays", h.replays.Index, RoleViewer},
		{http.MethodPost, "/replays/plan", h.replays.FormPlan, RoleOperator},
		{http.MethodGet, "/replays/plans/:id", h.replays.PlanPage, RoleViewer},
		{http.MethodPost, "/replays", h.replays.FormStart, RoleOperator},
		{http.MethodGet, "/replays/:id", h.replays.JobPage, RoleViewer},
		{http.MethodPost, "/replays/:id/cancel", h.replays.FormCancel, RoleOperator},
		{http.MethodPost, "/replays/:id/approve", h.replays.FormApprove, RoleOperator},

		{http.MethodGet, "/api/v1/outboxes", h.outboxes.APIList, RoleViewer},
		{http.MethodGet, "/api/v1/outboxes/:name", h.outboxes.APIOne, RoleViewer},
		{http.MethodGet, "/api/v1/outboxes/:name/events", h.outboxes.APIEvents, RoleViewer},
		{http.MethodGet, "/api/v1/outboxes/:name/events/:id", h.outboxes.APIEvent, RoleViewer},
		{http.MethodPost, "/api/v1/outboxes/:name/leases/release", h.outboxes.APIRelease, RoleOperator},
		{http.MethodPost, "/api/v1/outboxes/:name/events/requeue", h.outboxes.APIRequeue, RoleOperator},
		{http.MethodGet, "/api/v1/audit", h.audit.API, RoleViewer},
		{http.MethodGet, "/api/v1/notifications", h.notify.APIList, RoleViewer},
		{http.MethodPost, "/api/v1/notifications/channels/:name/test", h.notify.APITest, RoleOperator},
		{http.MethodGet, "/api/v1/silences", h.notify.APISilences, RoleViewer},
		{http.MethodPost, "/api/v1/silences", h.notify.APISilence, RoleOperator},
		{http.MethodGet, "/api/v1/replicas", h.replicas.API, RoleAdmin},
		{http.MethodGet, "/api/v1/admin/doctor", h.doctor.API, RoleAdmin},
		{http.MethodPost, "/api/v1/admin/reload", h.reload.apiReload, RoleAdmin},
		{http.MethodGet, "/api/v1/overview", h.overview.API, RoleViewer},
		{http.MethodGet, "/api/v1/kafka/:cluster/groups", h.kafka.APIGroups, RoleViewer},
		{http.MethodGet, "/api/v1/kafka/:cluster/groups/:group", h.kafka.APIGroup, RoleViewer},
		{http.MethodGet, "/api/v1/kafka/:cluster/groups/:group/history", h.kafka.APIGroupHistory, RoleViewer},
		{http.MethodPost, "/api/v1/kafka/:cluster/groups/:group/offsets/plan", h.offsets.APIPlan, RoleOperator},
		{http.MethodPost, "/api/v1/kafka/:cluster/groups/:group/offsets/apply", h.offsets.APIApply, RoleOperator},
		{http.MethodPost, "/api/v1/kafka/:cluster/groups/:group/offsets/approve", h.offsets.APIApprove, RoleOperator},
		{http.MethodGet, "/api/v1/kafka/:cluster/dead-letter-topics", h.kafka.APIDeadLetterTopics, RoleViewer},
		{http.MethodGet, "/api/v1/kafka/:cluster/topics/:topic/records", h.search.Records(h.kafka.APIRecords), RoleViewer},
		// Exports: from export.min_role (default operator).
		{http.MethodGet, "/api/v1/kafka/:cluster/topics/:topic/export", h.search.ExportKafka, exportRole(h.search)},
		{http.MethodGet, "/api/v1/kafka/:cluster/topics/:topic/error-groups", h.kafka.APIErrorGroups, RoleViewer},
		{http.MethodGet, "/api/v1/rabbitmq/:broker/queues", h.rabbit.APIQueues, RoleViewer},
		{http.MethodGet, "/api/v1/rabbitmq/:broker/queues/:vhost/:queue", h.rabbit.APIQueue, RoleViewer},
		{http.MethodGet, "/api/v1/rabbitmq/:broker/queues/:vhost/:queue/history", h.rabbit.APIQueueHistory, RoleViewer},
		{http.MethodGet, "/api/v1/rabbitmq/:broker/queues/:vhost/:queue/messages", h.search.Messages(h.rabbit.APIMessages), RoleViewer},
		{http.MethodGet, "/api/v1/rabbitmq/:broker/queues/:vhost/:queue/export", h.search.ExportRabbit, exportRole(h.search)},
		{http.MethodPost, "/api/v1/replays/plan", h.replays.APIPlan, RoleOperator},
		{http.MethodGet, "/api/v1/replays/plans/:id", h.replays.APIPlanGet, RoleViewer},
		{http.MethodPost, "/api/v1/replays", h.replays.APIStart, RoleOperator},
		{http.MethodGet, "/api/v1/replays", h.replays.APIJobs, RoleViewer},
		{http.MethodGet, "/api/v1/replays/:id", h.replays.APIJob, RoleViewer},
		{http.MethodPost, "/api/v1/replays/:id/cancel", h.replays.APICancel, RoleOperator},
		{http.MethodPost, "/api/v1/replays/:id/approve", h.replays.APIApprove, RoleOperator},
	}
}

// exportRole is the least role of the export routes: export.min_role (operator when unset).
func exportRole(s *handlers.Search) Role {
	switch s.ExportMinRole() {
	case "viewer":
		return RoleViewer
	case "admin":
		return RoleAdmin
	}
	return RoleOperator
}
