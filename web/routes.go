package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/paths"
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
	trace    *handlers.Trace
	archive  *handlers.Archive
}

// routes is the whole route table of the console, pages and API side by side.
func routes(h routeHandlers) []Route {
	return []Route{
		{http.MethodGet, paths.Healthz, h.health.Healthz, RolePublic},
		{http.MethodGet, paths.Readyz, h.health.Readyz, RolePublic},
		// Public: the document holds no data and no configuration, only what the source publishes.
		{http.MethodGet, paths.OpenAPI, serveOpenAPI, RolePublic},

		{http.MethodGet, paths.Overview, h.overview.Page, RoleViewer},
		{http.MethodGet, paths.Outboxes, h.outboxes.Index, RoleViewer},
		{http.MethodGet, paths.OutboxPattern, h.outboxes.Show, RoleViewer},
		{http.MethodGet, paths.OutboxPanelPattern, h.outboxes.Panel, RoleViewer},
		{http.MethodGet, paths.OutboxEventPattern, h.outboxes.EventPage, RoleViewer},
		{http.MethodPost, paths.OutboxReleasePattern, h.outboxes.FormRelease, RoleOperator},
		{http.MethodPost, paths.OutboxRequeuePattern, h.outboxes.FormRequeue, RoleOperator},
		{http.MethodGet, paths.Audit, h.audit.Page, RoleViewer},
		{http.MethodGet, paths.Notifications, h.notify.Page, RoleViewer},
		{http.MethodPost, paths.Silences, h.notify.FormSilence, RoleOperator},
		{http.MethodPost, paths.NotificationChannelTestPattern, h.notify.FormTest, RoleOperator},
		{http.MethodGet, paths.Doctor, h.doctor.Page, RoleAdmin},
		{http.MethodGet, paths.Kafka, h.kafka.Index, RoleViewer},
		{http.MethodGet, paths.KafkaClusterPattern, h.kafka.Cluster, RoleViewer},
		{http.MethodGet, paths.KafkaGroupPattern, h.kafka.GroupPage, RoleViewer},
		{http.MethodPost, paths.OffsetsPlanPattern, h.offsets.FormPlan, RoleOperator},
		{http.MethodPost, paths.OffsetsApplyPattern, h.offsets.FormApply, RoleOperator},
		{http.MethodPost, paths.OffsetsApprovePattern, h.offsets.FormApprove, RoleOperator},
		{http.MethodGet, paths.OffsetMovePattern, h.offsets.PlanPage, RoleViewer},
		{http.MethodGet, paths.KafkaTopicPattern, h.kafka.TopicPage, RoleViewer},
		{http.MethodGet, paths.KafkaTopicErrorsPattern, h.kafka.ErrorsPage, RoleViewer},
		{http.MethodPost, paths.KafkaResolutionsPattern, h.kafka.FormResolve, RoleOperator},
		{http.MethodPost, paths.KafkaNotesPattern, h.kafka.FormNote, RoleOperator},
		{http.MethodGet, paths.RabbitMQ, h.rabbit.Index, RoleViewer},
		{http.MethodGet, paths.RabbitBrokerPattern, h.rabbit.BrokerPage, RoleViewer},
		{http.MethodGet, paths.QueuePattern, h.rabbit.QueuePage, RoleViewer},
		{http.MethodGet, paths.QueueMessagesPattern, h.rabbit.MessagesPage, RoleViewer},
		{http.MethodGet, paths.Trace, h.trace.Page, RoleViewer},
		{http.MethodGet, paths.TraceStream, h.trace.Stream, RoleViewer},
		{http.MethodGet, paths.Replays, h.replays.Index, RoleViewer},
		{http.MethodPost, paths.PlanReplay, h.replays.FormPlan, RoleOperator},
		{http.MethodGet, paths.ReplayPlanPattern, h.replays.PlanPage, RoleViewer},
		{http.MethodPost, paths.Replays, h.replays.FormStart, RoleOperator},
		{http.MethodGet, paths.ReplayPattern, h.replays.JobPage, RoleViewer},
		{http.MethodPost, paths.ReplayCancelPattern, h.replays.FormCancel, RoleOperator},
		{http.MethodPost, paths.ReplayApprovePattern, h.replays.FormApprove, RoleOperator},

		{http.MethodGet, paths.APIOutboxes, h.outboxes.APIList, RoleViewer},
		{http.MethodGet, paths.APIOutboxPattern, h.outboxes.APIOne, RoleViewer},
		{http.MethodGet, paths.APIOutboxEventsPattern, h.outboxes.APIEvents, RoleViewer},
		{http.MethodGet, paths.APIOutboxEventPattern, h.outboxes.APIEvent, RoleViewer},
		{http.MethodPost, paths.APIOutboxReleasePattern, h.outboxes.APIRelease, RoleOperator},
		{http.MethodPost, paths.APIOutboxRequeuePattern, h.outboxes.APIRequeue, RoleOperator},
		{http.MethodGet, paths.APIAudit, h.audit.API, RoleViewer},
		{http.MethodGet, paths.APINotifications, h.notify.APIList, RoleViewer},
		{http.MethodPost, paths.APINotificationChannelTestPattern, h.notify.APITest, RoleOperator},
		{http.MethodGet, paths.APISilences, h.notify.APISilences, RoleViewer},
		{http.MethodPost, paths.APISilences, h.notify.APISilence, RoleOperator},
		{http.MethodGet, paths.APIReplicas, h.replicas.API, RoleAdmin},
		{http.MethodGet, paths.APIDoctor, h.doctor.API, RoleAdmin},
		{http.MethodPost, paths.APIReload, h.reload.apiReload, RoleAdmin},
		{http.MethodGet, paths.APIOverview, h.overview.API, RoleViewer},
		{http.MethodGet, paths.APITrace, h.trace.API, RoleViewer},
		{http.MethodGet, paths.APIKafkaGroupsPattern, h.kafka.APIGroups, RoleViewer},
		{http.MethodGet, paths.APIKafkaGroupPattern, h.kafka.APIGroup, RoleViewer},
		{http.MethodGet, paths.APIKafkaGroupHistoryPattern, h.kafka.APIGroupHistory, RoleViewer},
		{http.MethodPost, paths.APIOffsetsPlanPattern, h.offsets.APIPlan, RoleOperator},
		{http.MethodPost, paths.APIOffsetsApplyPattern, h.offsets.APIApply, RoleOperator},
		{http.MethodPost, paths.APIOffsetsApprovePattern, h.offsets.APIApprove, RoleOperator},
		{http.MethodGet, paths.APIDeadLetterTopicsPattern, h.kafka.APIDeadLetterTopics, RoleViewer},
		{http.MethodGet, paths.APIKafkaRecordsPattern, h.search.Records(h.kafka.APIRecords), RoleViewer},
		// Exports: from export.min_role (default operator).
		{http.MethodGet, paths.APIKafkaExportPattern, h.search.ExportKafka, exportRole(h.search)},
		{http.MethodGet, paths.APIKafkaErrorGroupsPattern, h.kafka.APIErrorGroups, RoleViewer},
		{http.MethodPost, paths.APIKafkaResolutionsPattern, h.kafka.APIResolve, RoleOperator},
		{http.MethodGet, paths.APIKafkaNotesPattern, h.kafka.APINotes, RoleViewer},
		{http.MethodPost, paths.APIKafkaNotesPattern, h.kafka.APINote, RoleOperator},
		{http.MethodGet, paths.APIRabbitQueuesPattern, h.rabbit.APIQueues, RoleViewer},
		{http.MethodGet, paths.APIQueuePattern, h.rabbit.APIQueue, RoleViewer},
		{http.MethodGet, paths.APIQueueHistoryPattern, h.rabbit.APIQueueHistory, RoleViewer},
		{http.MethodGet, paths.APIQueueMessagesPattern, h.search.Messages(h.rabbit.APIMessages), RoleViewer},
		{http.MethodGet, paths.APIQueueExportPattern, h.search.ExportRabbit, exportRole(h.search)},
		{http.MethodPost, paths.APIPlanReplay, h.replays.APIPlan, RoleOperator},
		{http.MethodGet, paths.APIReplayPlanPattern, h.replays.APIPlanGet, RoleViewer},
		{http.MethodPost, paths.APIReplays, h.replays.APIStart, RoleOperator},
		{http.MethodGet, paths.APIReplays, h.replays.APIJobs, RoleViewer},
		{http.MethodGet, paths.APIReplayPattern, h.replays.APIJob, RoleViewer},
		{http.MethodPost, paths.APIReplayCancelPattern, h.replays.APICancel, RoleOperator},
		{http.MethodPost, paths.APIReplayApprovePattern, h.replays.APIApprove, RoleOperator},
		{http.MethodGet, paths.APIArchive, h.archive.API, RoleViewer},
		{http.MethodPost, paths.APIArchiveRestorePattern, h.archive.APIRestore, RoleOperator},
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
