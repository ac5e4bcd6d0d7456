package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/paths"
)

// Route is one entry of the route table: who may call it is part of the route, so that the
// authorization of every route can be read, and tested, in one place.
type Route struct {
	Method  string
	Path    string
	Handler echo.HandlerFunc
	Role    access.Role // the least role allowed; access.Public needs no identity
}

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
	archive  *handlers.Archive
	notify   *handlers.Notifications
	trace    *handlers.Trace
}

// routes is the whole route table of the console, pages and API side by side.
func routes(h routeHandlers) []Route {
	return []Route{
		{http.MethodGet, paths.Healthz, h.health.Healthz, access.Public},
		{http.MethodGet, paths.Readyz, h.health.Readyz, access.Public},
		// Load balancers probe with HEAD: the same answer without its body (net/http drops it).
		{http.MethodHead, paths.Healthz, h.health.Healthz, access.Public},
		{http.MethodHead, paths.Readyz, h.health.Readyz, access.Public},
		// Public: the document holds no data and no configuration, only what the source publishes.
		{http.MethodGet, paths.OpenAPI, serveOpenAPI, access.Public},

		{http.MethodGet, paths.Overview, h.overview.Page, access.Viewer},
		{http.MethodGet, paths.Outboxes, h.outboxes.Index, access.Viewer},
		{http.MethodGet, paths.OutboxPattern, h.outboxes.Show, access.Viewer},
		{http.MethodGet, paths.OutboxPanelPattern, h.outboxes.Panel, access.Viewer},
		{http.MethodGet, paths.OutboxEventPattern, h.outboxes.EventPage, access.Viewer},
		{http.MethodPost, paths.OutboxReleasePattern, h.outboxes.FormRelease, access.Operator},
		{http.MethodPost, paths.OutboxRequeuePattern, h.outboxes.FormRequeue, access.Operator},
		{http.MethodPost, paths.OutboxResolutionsPattern, h.outboxes.FormResolve, access.Operator},
		{http.MethodGet, paths.Audit, h.audit.Page, access.Viewer},
		{http.MethodGet, paths.Notifications, h.notify.Page, access.Viewer},
		{http.MethodPost, paths.Silences, h.notify.FormSilence, access.Operator},
		{http.MethodPost, paths.SilenceEndPattern, h.notify.FormEndSilence, access.Operator},
		{http.MethodPost, paths.NotificationChannelTestPattern, h.notify.FormTest, access.Operator},
		{http.MethodGet, paths.Doctor, h.doctor.Page, access.Admin},
		{http.MethodGet, paths.Kafka, h.kafka.Index, access.Viewer},
		{http.MethodGet, paths.KafkaClusterPattern, h.kafka.Cluster, access.Viewer},
		{http.MethodGet, paths.KafkaGroupPattern, h.kafka.GroupPage, access.Viewer},
		{http.MethodPost, paths.OffsetsPlanPattern, h.offsets.FormPlan, access.Operator},
		{http.MethodPost, paths.OffsetsApplyPattern, h.offsets.FormApply, access.Operator},
		{http.MethodPost, paths.OffsetsApprovePattern, h.offsets.FormApprove, access.Operator},
		{http.MethodGet, paths.OffsetMovePattern, h.offsets.PlanPage, access.Viewer},
		{http.MethodGet, paths.KafkaTopicPattern, h.kafka.TopicPage, access.Viewer},
		{http.MethodGet, paths.KafkaTopicErrorsPattern, h.kafka.ErrorsPage, access.Viewer},
		{http.MethodGet, paths.KafkaRecordPattern, h.kafka.RecordDetail, access.Viewer},
		{http.MethodPost, paths.KafkaResolutionsPattern, h.kafka.FormResolve, access.Operator},
		{http.MethodPost, paths.KafkaNotesPattern, h.kafka.FormNote, access.Operator},
		{http.MethodGet, paths.RabbitMQ, h.rabbit.Index, access.Viewer},
		{http.MethodGet, paths.RabbitBrokerPattern, h.rabbit.BrokerPage, access.Viewer},
		{http.MethodGet, paths.QueuePattern, h.rabbit.QueuePage, access.Viewer},
		{http.MethodGet, paths.QueueMessagesPattern, h.rabbit.MessagesPage, access.Viewer},
		{http.MethodPost, paths.QueueNotesPattern, h.rabbit.FormQueueNote, access.Operator},
		{http.MethodGet, paths.Trace, h.trace.Page, access.Viewer},
		{http.MethodGet, paths.TraceStream, h.trace.Stream, access.Viewer},
		{http.MethodGet, paths.Replays, h.replays.Index, access.Viewer},
		{http.MethodPost, paths.PlanReplay, h.replays.FormPlan, access.Operator},
		{http.MethodGet, paths.ReplayPlanPattern, h.replays.PlanPage, access.Viewer},
		{http.MethodPost, paths.ReplayPlanCancelPattern, h.replays.FormPlanCancel, access.Operator},
		{http.MethodPost, paths.Replays, h.replays.FormStart, access.Operator},
		{http.MethodGet, paths.ReplayPattern, h.replays.JobPage, access.Viewer},
		{http.MethodPost, paths.ReplayCancelPattern, h.replays.FormCancel, access.Operator},
		{http.MethodPost, paths.ReplayApprovePattern, h.replays.FormApprove, access.Operator},
		{http.MethodGet, paths.Archive, h.archive.Page, access.Viewer},
		{http.MethodPost, paths.ArchiveRestorePattern, h.archive.FormRestore, access.Operator},

		{http.MethodGet, paths.APIOutboxes, h.outboxes.APIList, access.Viewer},
		{http.MethodGet, paths.APIOutboxPattern, h.outboxes.APIOne, access.Viewer},
		{http.MethodGet, paths.APIOutboxEventsPattern, h.outboxes.APIEvents, access.Viewer},
		{http.MethodGet, paths.APIOutboxEventPattern, h.outboxes.APIEvent, access.Viewer},
		{http.MethodPost, paths.APIOutboxReleasePattern, h.outboxes.APIRelease, access.Operator},
		{http.MethodPost, paths.APIOutboxRequeuePattern, h.outboxes.APIRequeue, access.Operator},
		{http.MethodPost, paths.APIOutboxResolutionsPattern, h.outboxes.APIResolve, access.Operator},
		{http.MethodGet, paths.APIAudit, h.audit.API, access.Viewer},
		{http.MethodGet, paths.APINotifications, h.notify.APIList, access.Viewer},
		{http.MethodPost, paths.APINotificationChannelTestPattern, h.notify.APITest, access.Operator},
		{http.MethodGet, paths.APISilences, h.notify.APISilences, access.Viewer},
		{http.MethodPost, paths.APISilences, h.notify.APISilence, access.Operator},
		{http.MethodDelete, paths.APISilencePattern, h.notify.APIEndSilence, access.Operator},
		{http.MethodGet, paths.APIReplicas, h.replicas.API, access.Admin},
		{http.MethodGet, paths.APIDoctor, h.doctor.API, access.Admin},
		{http.MethodPost, paths.APIReload, h.reload.apiReload, access.Admin},
		{http.MethodGet, paths.APIOverview, h.overview.API, access.Viewer},
		{http.MethodGet, paths.APITrace, h.trace.API, access.Viewer},
		{http.MethodGet, paths.APIKafkaGroupsPattern, h.kafka.APIGroups, access.Viewer},
		{http.MethodGet, paths.APIKafkaGroupPattern, h.kafka.APIGroup, access.Viewer},
		{http.MethodGet, paths.APIKafkaGroupHistoryPattern, h.kafka.APIGroupHistory, access.Viewer},
		{http.MethodPost, paths.APIOffsetsPlanPattern, h.offsets.APIPlan, access.Operator},
		{http.MethodPost, paths.APIOffsetsApplyPattern, h.offsets.APIApply, access.Operator},
		{http.MethodPost, paths.APIOffsetsApprovePattern, h.offsets.APIApprove, access.Operator},
		{http.MethodGet, paths.APIDeadLetterTopicsPattern, h.kafka.APIDeadLetterTopics, access.Viewer},
		{http.MethodGet, paths.APIKafkaRecordsPattern, h.search.Records(h.kafka.APIRecords), access.Viewer},
		// Exports: from export.min_role (default operator).
		{http.MethodGet, paths.APIKafkaExportPattern, h.search.ExportKafka, exportRole(h.search)},
		{http.MethodGet, paths.APIKafkaErrorGroupsPattern, h.kafka.APIErrorGroups, access.Viewer},
		{http.MethodPost, paths.APIKafkaResolutionsPattern, h.kafka.APIResolve, access.Operator},
		{http.MethodGet, paths.APIKafkaNotesPattern, h.kafka.APINotes, access.Viewer},
		{http.MethodPost, paths.APIKafkaNotesPattern, h.kafka.APINote, access.Operator},
		{http.MethodGet, paths.APIRabbitQueuesPattern, h.rabbit.APIQueues, access.Viewer},
		{http.MethodGet, paths.APIQueuePattern, h.rabbit.APIQueue, access.Viewer},
		{http.MethodGet, paths.APIQueueHistoryPattern, h.rabbit.APIQueueHistory, access.Viewer},
		{http.MethodGet, paths.APIQueueMessagesPattern, h.search.Messages(h.rabbit.APIMessages), access.Viewer},
		{http.MethodGet, paths.APIQueueExportPattern, h.search.ExportRabbit, exportRole(h.search)},
		{http.MethodGet, paths.APIQueueNotesPattern, h.rabbit.APIQueueNotes, access.Viewer},
		{http.MethodPost, paths.APIQueueNotesPattern, h.rabbit.APIQueueNote, access.Operator},
		{http.MethodPost, paths.APIPlanReplay, h.replays.APIPlan, access.Operator},
		{http.MethodGet, paths.APIReplayPlanPattern, h.replays.APIPlanGet, access.Viewer},
		{http.MethodPost, paths.APIReplayPlanCancelPattern, h.replays.APIPlanCancel, access.Operator},
		{http.MethodPost, paths.APIReplays, h.replays.APIStart, access.Operator},
		{http.MethodGet, paths.APIReplays, h.replays.APIJobs, access.Viewer},
		{http.MethodGet, paths.APIReplayPattern, h.replays.APIJob, access.Viewer},
		{http.MethodPost, paths.APIReplayCancelPattern, h.replays.APICancel, access.Operator},
		{http.MethodPost, paths.APIReplayApprovePattern, h.replays.APIApprove, access.Operator},
		{http.MethodGet, paths.APIArchive, h.archive.API, access.Viewer},
		{http.MethodPost, paths.APIArchiveRestorePattern, h.archive.APIRestore, access.Operator},
	}
}

// exportRole is the least role of the export routes: export.min_role (operator when unset).
func exportRole(s *handlers.Search) access.Role { return s.ExportMinRole() }

// headRoutes are HEAD of every GET route of table that answers at once (not an export, which
// would run the whole scan for headers only, nor an event stream), with the GET's handler and
// role: a HEAD on an API route was a 405. net/http sends the same status and headers without the
// body. Routes that declare their own HEAD keep it.
func headRoutes(table []Route) []Route {
	own := map[string]bool{}
	for _, r := range table {
		if r.Method == http.MethodHead {
			own[r.Path] = true
		}
	}
	var out []Route
	for _, r := range table {
		if r.Method != http.MethodGet || own[r.Path] || strings.HasSuffix(r.Path, paths.ExportSuffix) || r.Path == paths.TraceStream ||
			r.Path == paths.StaticPattern {
			continue
		}
		out = append(out, Route{http.MethodHead, r.Path, r.Handler, r.Role})
	}
	return out
}
