// Package paths is the one place that knows the console's URLs: each route's pattern, as the
// route table registers it, is declared beside the function that builds a link to it, so that a
// link cannot drift from its route and a name is escaped the same way on every page, in every
// redirect and in every notification. A route without parameters is one constant, pattern and
// link alike.
//
// It imports nothing of the project: web, handlers and views use it. The domain builds no link: it
// names a page in its own words (ops/page), and paths/links makes that a path at the edge.
package paths

import (
	"net/url"
	"strconv"
	"strings"
)

// Public routes: probes, metrics, the API document, static assets, signing in and out.
const (
	Healthz       = "/healthz"
	Readyz        = "/readyz"
	Metrics       = "/metrics"
	OpenAPI       = "/api/openapi.json"
	StaticPattern = "/static/*" // links to assets come from static.Path (content-hashed names)
	Login         = "/login"
	Logout        = "/logout"
	// APIPrefix starts every JSON route: middleware answers these with JSON rather than pages.
	APIPrefix = "/api/"
)

// LoginNext is the sign-in page that returns to next afterwards.
func LoginNext(next string) string { return WithQuery(Login, url.Values{"next": {next}}) }

// Pages.
const (
	Overview      = "/"
	Outboxes      = "/outboxes"
	Audit         = "/audit"
	Notifications = "/notifications"
	Silences      = "/notifications/silences"
	Doctor        = "/doctor"
	Kafka         = "/kafka"
	RabbitMQ      = "/rabbitmq"
	Replays       = "/replays" // GET lists jobs; POST starts one from a plan
	PlanReplay    = "/replays/plan"
	Archive       = "/archive" // messages discard jobs archived
	// ArchiveRestorePattern restores one archived message (the archive page's row forms).
	ArchiveRestorePattern = Archive + "/:id/restore"
)

// Outbox pages.
const (
	OutboxPattern        = "/outboxes/:name"
	OutboxPanelPattern   = OutboxPattern + "/panel"
	OutboxEventPattern   = OutboxPattern + "/events/:id"
	OutboxReleasePattern = OutboxPattern + "/release"
	OutboxRequeuePattern = OutboxPattern + "/requeue"
	// OutboxResolutionsPattern marks DEAD events resolved, ignored or open (the page's forms).
	OutboxResolutionsPattern = OutboxPattern + "/resolutions"
)

func Outbox(name string) string        { return build(OutboxPattern, name) }
func OutboxPanel(name string) string   { return build(OutboxPanelPattern, name) }
func OutboxRelease(name string) string { return build(OutboxReleasePattern, name) }
func OutboxRequeue(name string) string { return build(OutboxRequeuePattern, name) }
func OutboxResolutions(name string) string {
	return build(OutboxResolutionsPattern, name)
}

func OutboxEvent(name string, id int64) string {
	return build(OutboxEventPattern, name, strconv.FormatInt(id, 10))
}

// NotificationChannelTestPattern sends a test notification through one channel.
const NotificationChannelTestPattern = "/notifications/channels/:name/test"

func NotificationChannelTest(name string) string { return build(NotificationChannelTestPattern, name) }

// SilenceEndPattern ends one silence now (the notifications page's End button).
const SilenceEndPattern = Silences + "/:id/end"

func SilenceEnd(id int64) string { return build(SilenceEndPattern, strconv.FormatInt(id, 10)) }

// Kafka pages.
const (
	KafkaClusterPattern     = "/kafka/:cluster"
	KafkaGroupPattern       = KafkaClusterPattern + "/groups/:group"
	OffsetsPlanPattern      = KafkaGroupPattern + "/offsets/plan"
	OffsetsApplyPattern     = KafkaGroupPattern + "/offsets/apply"
	OffsetsApprovePattern   = KafkaGroupPattern + "/offsets/approve"
	OffsetMovePattern       = KafkaGroupPattern + "/offsets/:id"
	KafkaTopicPattern       = KafkaClusterPattern + "/topics/:topic"
	KafkaTopicErrorsPattern = KafkaTopicPattern + "/errors"
	// KafkaResolutionsPattern takes the pages' resolve forms (records, error groups).
	KafkaResolutionsPattern = KafkaTopicPattern + "/resolutions"
	// KafkaNotesPattern takes the pages' note forms (on an error group or a record).
	KafkaNotesPattern = KafkaTopicPattern + "/notes"
	// KafkaRecordPattern is one record's full view: what a topic page's row loads when it is
	// expanded; opened on its own, the topic page of that one record.
	KafkaRecordPattern = KafkaTopicPattern + "/records/:partition/:offset"
)

func KafkaCluster(cluster string) string        { return build(KafkaClusterPattern, cluster) }
func KafkaGroup(cluster, group string) string   { return build(KafkaGroupPattern, cluster, group) }
func OffsetsPlan(cluster, group string) string  { return build(OffsetsPlanPattern, cluster, group) }
func OffsetsApply(cluster, group string) string { return build(OffsetsApplyPattern, cluster, group) }
func OffsetsApprove(cluster, group string) string {
	return build(OffsetsApprovePattern, cluster, group)
}
func OffsetMove(cluster, group, id string) string {
	return build(OffsetMovePattern, cluster, group, id)
}
func KafkaTopic(cluster, topic string) string { return build(KafkaTopicPattern, cluster, topic) }
func KafkaTopicErrors(cluster, topic string) string {
	return build(KafkaTopicErrorsPattern, cluster, topic)
}
func KafkaResolutions(cluster, topic string) string {
	return build(KafkaResolutionsPattern, cluster, topic)
}
func KafkaNotes(cluster, topic string) string { return build(KafkaNotesPattern, cluster, topic) }
func KafkaRecord(cluster, topic string, partition int32, offset int64) string {
	return build(KafkaRecordPattern, cluster, topic, strconv.Itoa(int(partition)), strconv.FormatInt(offset, 10))
}

// RabbitMQ pages.
const (
	RabbitBrokerPattern  = "/rabbitmq/:broker"
	QueuePattern         = RabbitBrokerPattern + "/queues/:vhost/:queue"
	QueueMessagesPattern = QueuePattern + "/messages"
	QueueNotesPattern    = QueuePattern + "/notes" // the messages page's note forms
)

func RabbitBroker(broker string) string        { return build(RabbitBrokerPattern, broker) }
func Queue(broker, vhost, queue string) string { return build(QueuePattern, broker, vhost, queue) }
func QueueMessages(broker, vhost, queue string) string {
	return build(QueueMessagesPattern, broker, vhost, queue)
}
func QueueNotes(broker, vhost, queue string) string {
	return build(QueueNotesPattern, broker, vhost, queue)
}

// Replay pages.
const (
	ReplayPlanPattern    = "/replays/plans/:id"
	ReplayPattern        = "/replays/:id"
	ReplayCancelPattern  = ReplayPattern + "/cancel"
	ReplayApprovePattern = ReplayPattern + "/approve"
)

func ReplayPlan(id string) string    { return build(ReplayPlanPattern, id) }
func Replay(id string) string        { return build(ReplayPattern, id) }
func ReplayCancel(id string) string  { return build(ReplayCancelPattern, id) }
func ReplayApprove(id string) string { return build(ReplayApprovePattern, id) }

// ReplayPlanCancelPattern stops a plan being made.
const ReplayPlanCancelPattern = ReplayPlanPattern + "/cancel"

// ReplayPlanCancel stops plan id being made.
func ReplayPlanCancel(id string) string { return build(ReplayPlanCancelPattern, id) }

// Trace: one message (or one aggregate's messages) across every source; the page streams its
// steps from TraceStream.
const (
	Trace       = "/trace"
	TraceStream = "/trace/stream"
	APITrace    = "/api/v1/trace"
)

// TraceOf is the trace page of id given as param: message_id, event_id, aggregate_id, trace_id,
// or q for an id of unknown kind (the navigation's box).
func TraceOf(param, id string) string { return WithQuery(Trace, url.Values{param: {id}}) }

// JSON API (see web/openapi.yaml).
const (
	APIOverview      = "/api/v1/overview"
	APIOutboxes      = "/api/v1/outboxes"
	APIAudit         = "/api/v1/audit"
	APINotifications = "/api/v1/notifications"
	APISilences      = "/api/v1/silences"
	APIReplicas      = "/api/v1/replicas"
	APIDoctor        = "/api/v1/admin/doctor"
	APIReload        = "/api/v1/admin/reload"
	APIReplays       = "/api/v1/replays" // GET lists jobs; POST starts one from a plan
	APIPlanReplay    = "/api/v1/replays/plan"
	APIArchive       = "/api/v1/archive" // messages discard jobs archived
)

// JSON API: outboxes and notifications.
const (
	APIOutboxPattern                  = "/api/v1/outboxes/:name"
	APIOutboxEventsPattern            = APIOutboxPattern + "/events"
	APIOutboxEventPattern             = APIOutboxPattern + "/events/:id"
	APIOutboxReleasePattern           = APIOutboxPattern + "/leases/release"
	APIOutboxRequeuePattern           = APIOutboxPattern + "/events/requeue"
	APIOutboxResolutionsPattern       = APIOutboxPattern + "/resolutions"
	APINotificationChannelTestPattern = "/api/v1/notifications/channels/:name/test"
)

func APIOutbox(name string) string        { return build(APIOutboxPattern, name) }
func APIOutboxEvents(name string) string  { return build(APIOutboxEventsPattern, name) }
func APIOutboxRelease(name string) string { return build(APIOutboxReleasePattern, name) }
func APIOutboxRequeue(name string) string { return build(APIOutboxRequeuePattern, name) }
func APIOutboxResolutions(name string) string {
	return build(APIOutboxResolutionsPattern, name)
}
func APIOutboxEvent(name string, id int64) string {
	return build(APIOutboxEventPattern, name, strconv.FormatInt(id, 10))
}
func APINotificationChannelTest(name string) string {
	return build(APINotificationChannelTestPattern, name)
}

// APISilencePattern is one silence: DELETE ends it now.
const APISilencePattern = APISilences + "/:id"

func APISilence(id int64) string { return build(APISilencePattern, strconv.FormatInt(id, 10)) }

// JSON API: Kafka, RabbitMQ and replays.
const (
	APIKafkaGroupsPattern       = "/api/v1/kafka/:cluster/groups"
	APIKafkaGroupPattern        = APIKafkaGroupsPattern + "/:group"
	APIKafkaGroupHistoryPattern = APIKafkaGroupPattern + "/history"
	APIOffsetsPlanPattern       = APIKafkaGroupPattern + "/offsets/plan"
	APIOffsetsApplyPattern      = APIKafkaGroupPattern + "/offsets/apply"
	APIOffsetsApprovePattern    = APIKafkaGroupPattern + "/offsets/approve"
	APIDeadLetterTopicsPattern  = "/api/v1/kafka/:cluster/dead-letter-topics"
	APIKafkaRecordsPattern      = apiKafkaTopic + "/records"
	APIKafkaExportPattern       = apiKafkaTopic + ExportSuffix
	APIKafkaErrorGroupsPattern  = apiKafkaTopic + "/error-groups"
	APIKafkaResolutionsPattern  = apiKafkaTopic + "/resolutions"
	APIKafkaNotesPattern        = apiKafkaTopic + "/notes"
	APIRabbitQueuesPattern      = "/api/v1/rabbitmq/:broker/queues"
	APIQueuePattern             = APIRabbitQueuesPattern + "/:vhost/:queue"
	APIQueueHistoryPattern      = APIQueuePattern + "/history"
	APIQueueMessagesPattern     = APIQueuePattern + "/messages"
	APIQueueNotesPattern        = APIQueuePattern + "/notes"
	APIQueueExportPattern       = APIQueuePattern + ExportSuffix
	APIReplayPlanPattern        = "/api/v1/replays/plans/:id"
	APIReplayPattern            = "/api/v1/replays/:id"
	APIReplayCancelPattern      = APIReplayPattern + "/cancel"
	APIReplayApprovePattern     = APIReplayPattern + "/approve"
	APIArchiveRestorePattern    = APIArchive + "/:id/restore"

	apiKafkaTopic = "/api/v1/kafka/:cluster/topics/:topic" // where a topic's API routes start; no route itself
)

// ExportSuffix ends every export route: web lets these outlive request_timeout (an export of a
// million records streams for longer), bounded by the client staying connected.
const ExportSuffix = "/export"

func APIKafkaGroups(cluster string) string       { return build(APIKafkaGroupsPattern, cluster) }
func APIKafkaGroup(cluster, group string) string { return build(APIKafkaGroupPattern, cluster, group) }
func APIKafkaGroupHistory(cluster, group string) string {
	return build(APIKafkaGroupHistoryPattern, cluster, group)
}
func APIOffsetsPlan(cluster, group string) string {
	return build(APIOffsetsPlanPattern, cluster, group)
}
func APIOffsetsApply(cluster, group string) string {
	return build(APIOffsetsApplyPattern, cluster, group)
}
func APIOffsetsApprove(cluster, group string) string {
	return build(APIOffsetsApprovePattern, cluster, group)
}
func APIDeadLetterTopics(cluster string) string { return build(APIDeadLetterTopicsPattern, cluster) }
func APIKafkaRecords(cluster, topic string) string {
	return build(APIKafkaRecordsPattern, cluster, topic)
}
func APIKafkaExport(cluster, topic string) string {
	return build(APIKafkaExportPattern, cluster, topic)
}
func APIKafkaErrorGroups(cluster, topic string) string {
	return build(APIKafkaErrorGroupsPattern, cluster, topic)
}
func APIKafkaResolutions(cluster, topic string) string {
	return build(APIKafkaResolutionsPattern, cluster, topic)
}
func APIKafkaNotes(cluster, topic string) string { return build(APIKafkaNotesPattern, cluster, topic) }

func APIRabbitQueues(broker string) string { return build(APIRabbitQueuesPattern, broker) }
func APIQueue(broker, vhost, queue string) string {
	return build(APIQueuePattern, broker, vhost, queue)
}
func APIQueueHistory(broker, vhost, queue string) string {
	return build(APIQueueHistoryPattern, broker, vhost, queue)
}
func APIQueueMessages(broker, vhost, queue string) string {
	return build(APIQueueMessagesPattern, broker, vhost, queue)
}
func APIQueueNotes(broker, vhost, queue string) string {
	return build(APIQueueNotesPattern, broker, vhost, queue)
}
func APIQueueExport(broker, vhost, queue string) string {
	return build(APIQueueExportPattern, broker, vhost, queue)
}

func APIReplayPlan(id string) string    { return build(APIReplayPlanPattern, id) }
func APIReplay(id string) string        { return build(APIReplayPattern, id) }
func APIReplayCancel(id string) string  { return build(APIReplayCancelPattern, id) }
func APIReplayApprove(id string) string { return build(APIReplayApprovePattern, id) }
func ArchiveRestore(id int64) string    { return build(ArchiveRestorePattern, strconv.FormatInt(id, 10)) }
func APIArchiveRestore(id int64) string {
	return build(APIArchiveRestorePattern, strconv.FormatInt(id, 10))
}

// APIReplayPlanCancelPattern stops a plan being made.
const APIReplayPlanCancelPattern = APIReplayPlanPattern + "/cancel"

// APIReplayPlanCancel stops plan id being made.
func APIReplayPlanCancel(id string) string { return build(APIReplayPlanCancelPattern, id) }

// WithQuery is p with the query q (keys sorted, as url.Values encodes them); p alone when q is
// empty.
func WithQuery(p string, q url.Values) string {
	if len(q) == 0 {
		return p
	}
	return p + "?" + q.Encode()
}

// Reveal is the current page again with reveal=true (an admin's audited look at masked values),
// keeping the page's own query given as name, value pairs; empty values are left out.
func Reveal(pairs ...string) string {
	q := url.Values{"reveal": {"true"}}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			q.Set(pairs[i], pairs[i+1])
		}
	}
	return "?" + q.Encode()
}

// PlanSelected is where a page's "plan a replay of the selected" form posts: field names the form
// field its ticked rows arrive in, so that a post with none ticked is refused instead of planning
// everything else the form names (the whole topic, queue or outbox).
func PlanSelected(field string) string { return WithQuery(PlanReplay, url.Values{"selected": {field}}) }

// Since is p showing the chart range r ("1h", "7d"): a page's range links and the history API
// behind its chart.
func Since(p, r string) string { return WithQuery(p, url.Values{"since": {r}}) }

// build fills pattern's parameters (":name" segments) with args in order, each escaped as one
// segment. A count that does not match is a programming error caught by this package's tests.
func build(pattern string, args ...string) string {
	if n := strings.Count(pattern, ":"); n != len(args) {
		panic("paths: " + pattern + " takes " + strconv.Itoa(n) + " parameters, not " + strconv.Itoa(len(args)))
	}
	var b strings.Builder
	b.Grow(len(pattern) + 16*len(args))
	for rest, n := pattern, 0; rest != ""; n++ {
		i := strings.IndexByte(rest, ':')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i+1:]
		end := strings.IndexByte(rest, '/')
		if end < 0 {
			end = len(rest)
		}
		b.WriteString(Segment(args[n]))
		rest = rest[end:]
	}
	return b.String()
}
