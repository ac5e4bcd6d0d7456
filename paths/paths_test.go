package paths

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// builder is one link builder of this package with the pattern it must be routed by.
type builder struct {
	name    string // the function's (or constant's) name: the completeness check reads it
	pattern string
	build   func(a []string) string
	want    func(a []string) []string // the parameters the router must hand back; a when nil
}

// fixed is a route without parameters: the constant is its pattern and its link.
func fixed(name, p string) builder {
	return builder{name: name, pattern: p, build: func([]string) string { return p }}
}

// one, two and three are builders of one, two and three names (a cluster, a topic; a broker, a
// vhost, a queue).
func one(name, pattern string, f func(string) string) builder {
	return builder{name: name, pattern: pattern, build: func(a []string) string { return f(a[0]) }}
}

func two(name, pattern string, f func(string, string) string) builder {
	return builder{name: name, pattern: pattern, build: func(a []string) string { return f(a[0], a[1]) }}
}

func three(name, pattern string, f func(string, string, string) string) builder {
	return builder{name: name, pattern: pattern, build: func(a []string) string { return f(a[0], a[1], a[2]) }}
}

// withID is a builder whose last parameter is a number (an outbox event id), not a name.
func withID(name, pattern string, f func(name string, id int64) string) builder {
	return builder{name: name, pattern: pattern, build: func(a []string) string { return f(a[0], 42) },
		want: func(a []string) []string { return []string{a[0], "42"} }}
}

// withPosition is a builder of a name pair and a record's position (a partition, an offset).
func withPosition(name, pattern string, f func(a, b string, partition int32, offset int64) string) builder {
	return builder{name: name, pattern: pattern, build: func(a []string) string { return f(a[0], a[1], 3, 42) },
		want: func(a []string) []string { return []string{a[0], a[1], "3", "42"} }}
}

// withNumber is a builder whose only parameter is a number (an archived message's id).
func withNumber(name, pattern string, f func(id int64) string) builder {
	return builder{name: name, pattern: pattern, build: func([]string) string { return f(42) },
		want: func([]string) []string { return []string{"42"} }}
}

var builders = []builder{
	fixed("Healthz", Healthz), fixed("Readyz", Readyz), fixed("Metrics", Metrics), fixed("OpenAPI", OpenAPI),
	fixed("Login", Login), fixed("Logout", Logout),
	fixed("Overview", Overview), fixed("Outboxes", Outboxes), fixed("Audit", Audit), fixed("Notifications", Notifications),
	fixed("Silences", Silences), fixed("Doctor", Doctor), fixed("Kafka", Kafka), fixed("RabbitMQ", RabbitMQ),
	fixed("Replays", Replays), fixed("PlanReplay", PlanReplay), fixed("Archive", Archive),
	fixed("APIOverview", APIOverview), fixed("APIOutboxes", APIOutboxes), fixed("APIAudit", APIAudit),
	fixed("APINotifications", APINotifications), fixed("APISilences", APISilences), fixed("APIReplicas", APIReplicas), fixed("APIArchive", APIArchive),
	fixed("APIDoctor", APIDoctor), fixed("APIReload", APIReload), fixed("APIReplays", APIReplays),
	fixed("APIPlanReplay", APIPlanReplay),
	fixed("Trace", Trace), fixed("TraceStream", TraceStream), fixed("APITrace", APITrace),

	one("Outbox", OutboxPattern, Outbox),
	one("OutboxPanel", OutboxPanelPattern, OutboxPanel),
	one("OutboxRelease", OutboxReleasePattern, OutboxRelease),
	one("OutboxRequeue", OutboxRequeuePattern, OutboxRequeue),
	one("OutboxResolutions", OutboxResolutionsPattern, OutboxResolutions),
	withID("OutboxEvent", OutboxEventPattern, OutboxEvent),
	one("NotificationChannelTest", NotificationChannelTestPattern, NotificationChannelTest),

	one("KafkaCluster", KafkaClusterPattern, KafkaCluster),
	two("KafkaGroup", KafkaGroupPattern, KafkaGroup),
	two("OffsetsPlan", OffsetsPlanPattern, OffsetsPlan),
	two("OffsetsApply", OffsetsApplyPattern, OffsetsApply),
	two("OffsetsApprove", OffsetsApprovePattern, OffsetsApprove),
	three("OffsetMove", OffsetMovePattern, OffsetMove),
	two("KafkaTopic", KafkaTopicPattern, KafkaTopic),
	two("KafkaResolutions", KafkaResolutionsPattern, KafkaResolutions),
	two("KafkaNotes", KafkaNotesPattern, KafkaNotes),
	two("KafkaTopicErrors", KafkaTopicErrorsPattern, KafkaTopicErrors),
	withPosition("KafkaRecord", KafkaRecordPattern, KafkaRecord),

	one("RabbitBroker", RabbitBrokerPattern, RabbitBroker),
	three("Queue", QueuePattern, Queue),
	three("QueueMessages", QueueMessagesPattern, QueueMessages),
	three("QueueNotes", QueueNotesPattern, QueueNotes),

	one("ReplayPlan", ReplayPlanPattern, ReplayPlan),
	one("ReplayPlanCancel", ReplayPlanCancelPattern, ReplayPlanCancel),
	one("Replay", ReplayPattern, Replay),
	one("ReplayCancel", ReplayCancelPattern, ReplayCancel),
	one("ReplayApprove", ReplayApprovePattern, ReplayApprove),

	one("APIOutbox", APIOutboxPattern, APIOutbox),
	one("APIOutboxEvents", APIOutboxEventsPattern, APIOutboxEvents),
	withID("APIOutboxEvent", APIOutboxEventPattern, APIOutboxEvent),
	one("APIOutboxRelease", APIOutboxReleasePattern, APIOutboxRelease),
	one("APIOutboxRequeue", APIOutboxRequeuePattern, APIOutboxRequeue),
	one("APIOutboxResolutions", APIOutboxResolutionsPattern, APIOutboxResolutions),
	one("APINotificationChannelTest", APINotificationChannelTestPattern, APINotificationChannelTest),

	one("APIKafkaGroups", APIKafkaGroupsPattern, APIKafkaGroups),
	two("APIKafkaGroup", APIKafkaGroupPattern, APIKafkaGroup),
	two("APIKafkaGroupHistory", APIKafkaGroupHistoryPattern, APIKafkaGroupHistory),
	two("APIOffsetsPlan", APIOffsetsPlanPattern, APIOffsetsPlan),
	two("APIOffsetsApply", APIOffsetsApplyPattern, APIOffsetsApply),
	two("APIOffsetsApprove", APIOffsetsApprovePattern, APIOffsetsApprove),
	one("APIDeadLetterTopics", APIDeadLetterTopicsPattern, APIDeadLetterTopics),
	two("APIKafkaRecords", APIKafkaRecordsPattern, APIKafkaRecords),
	two("APIKafkaExport", APIKafkaExportPattern, APIKafkaExport),
	two("APIKafkaErrorGroups", APIKafkaErrorGroupsPattern, APIKafkaErrorGroups),
	two("APIKafkaResolutions", APIKafkaResolutionsPattern, APIKafkaResolutions),
	two("APIKafkaNotes", APIKafkaNotesPattern, APIKafkaNotes),

	one("APIRabbitQueues", APIRabbitQueuesPattern, APIRabbitQueues),
	three("APIQueue", APIQueuePattern, APIQueue),
	three("APIQueueHistory", APIQueueHistoryPattern, APIQueueHistory),
	three("APIQueueMessages", APIQueueMessagesPattern, APIQueueMessages),
	three("APIQueueNotes", APIQueueNotesPattern, APIQueueNotes),
	three("APIQueueExport", APIQueueExportPattern, APIQueueExport),

	one("APIReplayPlan", APIReplayPlanPattern, APIReplayPlan),
	one("APIReplayPlanCancel", APIReplayPlanCancelPattern, APIReplayPlanCancel),
	one("APIReplay", APIReplayPattern, APIReplay),
	one("APIReplayCancel", APIReplayCancelPattern, APIReplayCancel),
	one("APIReplayApprove", APIReplayApprovePattern, APIReplayApprove),
	withNumber("APIArchiveRestore", APIArchiveRestorePattern, APIArchiveRestore),
	withNumber("ArchiveRestore", ArchiveRestorePattern, ArchiveRestore),
	withNumber("SilenceEnd", SilenceEndPattern, SilenceEnd), withNumber("APISilence", APISilencePattern, APISilence),
}

// awkward are names that break hand-built links: the default vhost "/", names with "/", spaces,
// "#", "?", "%", dots (a Kafka DLT, the dot segments a browser would drop), ";", "+", "&" and
// text that is not ASCII.
var awkward = []string{"/", "shop/eu", "a b#?%", "orders.DLT", "..", ".", ".;", "100%", "%41", "a;b", "x+y&z=1", "évé", "orders-1"}

// Every builder's link, for every awkward name in every parameter, is routed by echo to the
// builder's own pattern, and its parameters read back (ParseSegment, as handlers.PathParam does)
// are the names it was built from. All patterns share one router, as in the route table, so a
// link that another pattern would capture fails too.
func TestLinksRouteBackToTheirNames(t *testing.T) {
	e := echo.New()
	var got struct {
		pattern string
		params  []string
	}
	for _, b := range builders {
		e.Any(b.pattern, func(c echo.Context) error {
			got.pattern, got.params = c.Path(), nil
			for _, n := range c.ParamNames() {
				got.params = append(got.params, ParseSegment(c.Param(n), c.Request().URL.RawPath != ""))
			}
			return c.NoContent(http.StatusNoContent)
		})
	}
	for _, b := range builders {
		n := strings.Count(b.pattern, ":")
		for k := range awkward {
			args := make([]string, n)
			for i := range args { // each parameter a different name: a swapped pair shows
				args[i] = awkward[(k+i)%len(awkward)]
			}
			u := b.build(args)
			for _, seg := range strings.Split(strings.TrimPrefix(u, "/"), "/") {
				if seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e") {
					t.Fatalf("%s(%q) = %s: a browser drops the dot segment %q", b.name, args, u, seg)
				}
			}
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				got.pattern, got.params = "", nil
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, httptest.NewRequest(method, u, nil))
				want := args
				if b.want != nil {
					want = b.want(args)
				}
				if rec.Code != http.StatusNoContent || got.pattern != b.pattern || strings.Join(got.params, "\x00") != strings.Join(want, "\x00") {
					t.Errorf("%s %s(%q) = %s: routed to %q with %q (status %d); want %s with %q",
						method, b.name, args, u, got.pattern, got.params, rec.Code, b.pattern, want)
				}
			}
		}
	}
}

// Every exported builder and route constant of this package is in the table above, so that the
// round trip covers each of them: a route added without a line there fails here.
func TestEveryBuilderIsRoundTripped(t *testing.T) {
	helpers := map[string]bool{"WithQuery": true, "Since": true, "LoginNext": true, "TraceOf": true, "PlanSelected": true, "Segment": true, "ParseSegment": true,
		"APIPrefix": true, "ExportSuffix": true, "StaticPattern": true, "Reveal": true} // not routes, or assets (static.Path)
	listed := map[string]bool{}
	for _, b := range builders {
		listed[b.name] = true
	}
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, src := range sources {
		if strings.HasSuffix(src, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, s := range d.Specs {
					for _, id := range s.(*ast.ValueSpec).Names {
						if !strings.HasSuffix(id.Name, "Pattern") { // a pattern is checked with its builder
							names = append(names, id.Name)
						} else if !helpers[id.Name] && !listed[strings.TrimSuffix(id.Name, "Pattern")] {
							t.Errorf("%s has no builder %s in the round-trip table", id.Name, strings.TrimSuffix(id.Name, "Pattern"))
						}
					}
				}
			}
		}
	}
	for _, n := range names {
		if ast.IsExported(n) && !helpers[n] && !listed[n] {
			t.Errorf("%s is not in the round-trip table", n)
		}
	}
}

func TestQueries(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{WithQuery(Audit, nil), "/audit"},
		{WithQuery(Outbox("a b"), url.Values{"status": {"DEAD"}, "cursor": {"7"}}), "/outboxes/a%20b?cursor=7&status=DEAD"},
		{Since(APIQueueHistory("main", "/", "q#1"), "1h"), "/api/v1/rabbitmq/main/queues/%2F/q%231/history?since=1h"},
		{Since(KafkaGroup("main", "billing"), "7 d&x"), "/kafka/main/groups/billing?since=7+d%26x"},
		{LoginNext("/kafka/main?partition=all"), "/login?next=%2Fkafka%2Fmain%3Fpartition%3Dall"},
		{TraceOf("aggregate_id", "order 100&x"), "/trace?aggregate_id=order+100%26x"},
		{PlanSelected("message_ids"), "/replays/plan?selected=message_ids"},
		{Reveal("limit", "50", "reason", "", "group", "a&b"), "?group=a%26b&limit=50&reveal=true"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s; want %s", tc.got, tc.want)
		}
	}
}

// A builder handed the wrong number of names is a programming error, said at once.
func TestBuildCountsParameters(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "takes 3 parameters, not 4") {
			t.Errorf("panic %v; want the parameter count", r)
		}
	}()
	build(QueuePattern, "a", "b", "c", "d")
}
