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

// withID is a builder whose last parameter is a number (an outbox event id), not a name.
func withID(name, pattern string, f func(name string, id int64) string) builder {
	return builder{name: name, pattern: pattern, build: func(a []string) string { return f(a[0], 42) },
		want: func(a []string) []string { return []string{a[0], "42"} }}
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

	{"Outbox", OutboxPattern, func(a []string) string { return Outbox(a[0]) }, nil},
	{"OutboxPanel", OutboxPanelPattern, func(a []string) string { return OutboxPanel(a[0]) }, nil},
	{"OutboxRelease", OutboxReleasePattern, func(a []string) string { return OutboxRelease(a[0]) }, nil},
	{"OutboxRequeue", OutboxRequeuePattern, func(a []string) string { return OutboxRequeue(a[0]) }, nil},
	{"OutboxResolutions", OutboxResolutionsPattern, func(a []string) string { return OutboxResolutions(a[0]) }, nil},
	withID("OutboxEvent", OutboxEventPattern, OutboxEvent),
	{"NotificationChannelTest", NotificationChannelTestPattern, func(a []string) string { return NotificationChannelTest(a[0]) }, nil},

	{"KafkaCluster", KafkaClusterPattern, func(a []string) string { return KafkaCluster(a[0]) }, nil},
	{"KafkaGroup", KafkaGroupPattern, func(a []string) string { return KafkaGroup(a[0], a[1]) }, nil},
	{"OffsetsPlan", OffsetsPlanPattern, func(a []string) string { return OffsetsPlan(a[0], a[1]) }, nil},
	{"OffsetsApply", OffsetsApplyPattern, func(a []string) string { return OffsetsApply(a[0], a[1]) }, nil},
	{"OffsetsApprove", OffsetsApprovePattern, func(a []string) string { return OffsetsApprove(a[0], a[1]) }, nil},
	{"OffsetMove", OffsetMovePattern, func(a []string) string { return OffsetMove(a[0], a[1], a[2]) }, nil},
	{"KafkaTopic", KafkaTopicPattern, func(a []string) string { return KafkaTopic(a[0], a[1]) }, nil},
	{"KafkaResolutions", KafkaResolutionsPattern, func(a []string) string { return KafkaResolutions(a[0], a[1]) }, nil},
	{"KafkaNotes", KafkaNotesPattern, func(a []string) string { return KafkaNotes(a[0], a[1]) }, nil},
	{"KafkaTopicErrors", KafkaTopicErrorsPattern, func(a []string) string { return KafkaTopicErrors(a[0], a[1]) }, nil},

	{"RabbitBroker", RabbitBrokerPattern, func(a []string) string { return RabbitBroker(a[0]) }, nil},
	{"Queue", QueuePattern, func(a []string) string { return Queue(a[0], a[1], a[2]) }, nil},
	{"QueueMessages", QueueMessagesPattern, func(a []string) string { return QueueMessages(a[0], a[1], a[2]) }, nil},
	{"QueueNotes", QueueNotesPattern, func(a []string) string { return QueueNotes(a[0], a[1], a[2]) }, nil},

	{"ReplayPlan", ReplayPlanPattern, func(a []string) string { return ReplayPlan(a[0]) }, nil},
	{"Replay", ReplayPattern, func(a []string) string { return Replay(a[0]) }, nil},
	{"ReplayCancel", ReplayCancelPattern, func(a []string) string { return ReplayCancel(a[0]) }, nil},
	{"ReplayApprove", ReplayApprovePattern, func(a []string) string { return ReplayApprove(a[0]) }, nil},

	{"APIOutbox", APIOutboxPattern, func(a []string) string { return APIOutbox(a[0]) }, nil},
	{"APIOutboxEvents", APIOutboxEventsPattern, func(a []string) string { return APIOutboxEvents(a[0]) }, nil},
	withID("APIOutboxEvent", APIOutboxEventPattern, APIOutboxEvent),
	{"APIOutboxRelease", APIOutboxReleasePattern, func(a []string) string { return APIOutboxRelease(a[0]) }, nil},
	{"APIOutboxRequeue", APIOutboxRequeuePattern, func(a []string) string { return APIOutboxRequeue(a[0]) }, nil},
	{"APIOutboxResolutions", APIOutboxResolutionsPattern, func(a []string) string { return APIOutboxResolutions(a[0]) }, nil},
	{"APINotificationChannelTest", APINotificationChannelTestPattern, func(a []string) string { return APINotificationChannelTest(a[0]) }, nil},

	{"APIKafkaGroups", APIKafkaGroupsPattern, func(a []string) string { return APIKafkaGroups(a[0]) }, nil},
	{"APIKafkaGroup", APIKafkaGroupPattern, func(a []string) string { return APIKafkaGroup(a[0], a[1]) }, nil},
	{"APIKafkaGroupHistory", APIKafkaGroupHistoryPattern, func(a []string) string { return APIKafkaGroupHistory(a[0], a[1]) }, nil},
	{"APIOffsetsPlan", APIOffsetsPlanPattern, func(a []string) string { return APIOffsetsPlan(a[0], a[1]) }, nil},
	{"APIOffsetsApply", APIOffsetsApplyPattern, func(a []string) string { return APIOffsetsApply(a[0], a[1]) }, nil},
	{"APIOffsetsApprove", APIOffsetsApprovePattern, func(a []string) string { return APIOffsetsApprove(a[0], a[1]) }, nil},
	{"APIDeadLetterTopics", APIDeadLetterTopicsPattern, func(a []string) string { return APIDeadLetterTopics(a[0]) }, nil},
	{"APIKafkaRecords", APIKafkaRecordsPattern, func(a []string) string { return APIKafkaRecords(a[0], a[1]) }, nil},
	{"APIKafkaExport", APIKafkaExportPattern, func(a []string) string { return APIKafkaExport(a[0], a[1]) }, nil},
	{"APIKafkaErrorGroups", APIKafkaErrorGroupsPattern, func(a []string) string { return APIKafkaErrorGroups(a[0], a[1]) }, nil},
	{"APIKafkaResolutions", APIKafkaResolutionsPattern, func(a []string) string { return APIKafkaResolutions(a[0], a[1]) }, nil},
	{"APIKafkaNotes", APIKafkaNotesPattern, func(a []string) string { return APIKafkaNotes(a[0], a[1]) }, nil},

	{"APIRabbitQueues", APIRabbitQueuesPattern, func(a []string) string { return APIRabbitQueues(a[0]) }, nil},
	{"APIQueue", APIQueuePattern, func(a []string) string { return APIQueue(a[0], a[1], a[2]) }, nil},
	{"APIQueueHistory", APIQueueHistoryPattern, func(a []string) string { return APIQueueHistory(a[0], a[1], a[2]) }, nil},
	{"APIQueueMessages", APIQueueMessagesPattern, func(a []string) string { return APIQueueMessages(a[0], a[1], a[2]) }, nil},
	{"APIQueueNotes", APIQueueNotesPattern, func(a []string) string { return APIQueueNotes(a[0], a[1], a[2]) }, nil},
	{"APIQueueExport", APIQueueExportPattern, func(a []string) string { return APIQueueExport(a[0], a[1], a[2]) }, nil},

	{"APIReplayPlan", APIReplayPlanPattern, func(a []string) string { return APIReplayPlan(a[0]) }, nil},
	{"APIReplay", APIReplayPattern, func(a []string) string { return APIReplay(a[0]) }, nil},
	{"APIReplayCancel", APIReplayCancelPattern, func(a []string) string { return APIReplayCancel(a[0]) }, nil},
	{"APIReplayApprove", APIReplayApprovePattern, func(a []string) string { return APIReplayApprove(a[0]) }, nil},
	withNumber("APIArchiveRestore", APIArchiveRestorePattern, APIArchiveRestore),
	withNumber("ArchiveRestore", ArchiveRestorePattern, ArchiveRestore),
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
	helpers := map[string]bool{"WithQuery": true, "Since": true, "LoginNext": true, "TraceOf": true, "Segment": true, "ParseSegment": true,
		"APIPrefix": true, "ExportSuffix": true, "StaticPattern": true} // not routes, or assets (static.Path)
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
