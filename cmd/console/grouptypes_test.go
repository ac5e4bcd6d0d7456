package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/cmd/internal/devstack"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// typedGroup is a group as GET /api/v1/kafka/{cluster}/groups[/{group}] answers it, with the
// fields every type adds.
type typedGroup struct {
	Group              string     `json:"group"`
	Type               string     `json:"type"`
	State              string     `json:"state"`
	Members            int        `json:"members"`
	TotalLag           int64      `json:"total_lag"`
	Status             string     `json:"status"`
	Reason             string     `json:"reason"`
	StatusSince        *time.Time `json:"status_since"`
	GroupEpoch         *int32     `json:"group_epoch"`
	AssignmentEpoch    *int32     `json:"assignment_epoch"`
	DeliveryCountLimit *int       `json:"delivery_count_limit"`
	MaxLagSeconds      *float64   `json:"max_lag_seconds"`
	Topics             []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition        int32  `json:"partition"`
			Committed        *int64 `json:"committed"`
			ShareStartOffset *int64 `json:"share_start_offset"`
			End              int64  `json:"end"`
			Lag              int64  `json:"lag"`
			Member           string `json:"member"`
		} `json:"partitions"`
	} `json:"topics"`
	MemberList []struct {
		MemberID    string `json:"member_id"`
		ClientID    string `json:"client_id"`
		MemberEpoch *int32 `json:"member_epoch"`
		Assigned    []struct {
			Topic      string  `json:"topic"`
			Partitions []int32 `json:"partitions"`
		} `json:"assigned"`
	} `json:"member_list"`
}

// groupTypesWorld is a cluster holding a group of each type: billing (classic, offsets only,
// committed 2 of 10 on each of orders' 3 partitions), shipping (KIP-848, its member worker-848
// live, committed 4, 7 and 10) and mailer (share, its member share-worker live, having accepted
// jobs' records 0–3 of 10 and holding the rest unacknowledged).
func groupTypesWorld(t *testing.T, ctx context.Context) *devstack.Kafka {
	t.Helper()
	k := startKafka(t, map[string]int32{"orders": 3, "jobs": 1, "orders.DLT": 1})
	prod := kfaketest.Client(t, k.Cluster(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(prod)
	var recs []*kgo.Record
	for p := range int32(3) {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Value: fmt.Appendf(nil, `{"order":%d}`, i),
				Timestamp: time.Now().Add(-10 * time.Minute)})
		}
	}
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "jobs", Value: fmt.Appendf(nil, `{"job":%d}`, i), Timestamp: time.Now().Add(-7 * time.Minute)})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kfaketest.Commit(t, adm, "billing", "orders", map[int32]int64{0: 2, 1: 2, 2: 2})

	member := kfaketest.Client(t, k.Cluster(), kgo.ClientID("worker-848"), kgo.ConsumerGroup("shipping"), kgo.ConsumeTopics("orders"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for member.PollFetches(ctx).NumRecords() == 0 {
		if ctx.Err() != nil {
			t.Fatal("the KIP-848 member read nothing")
		}
	}
	var cerr error
	member.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"orders": {0: {Epoch: -1, Offset: 4}, 1: {Epoch: -1, Offset: 7},
		2: {Epoch: -1, Offset: 10}}}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = err
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if cerr == nil {
					cerr = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	})
	if cerr != nil {
		t.Fatalf("commit: %v", cerr)
	}

	// A share group reads what is already there only with share.auto.offset.reset=earliest, a
	// group config (resource type GROUP).
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "mailer"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	if _, err := req.RequestWith(ctx, prod); err != nil {
		t.Fatal(err)
	}
	share := kfaketest.Client(t, k.Cluster(), kgo.ClientID("share-worker"), kgo.ShareGroup("mailer"), kgo.ConsumeTopics("jobs"))
	var got []*kgo.Record
	for len(got) == 0 {
		if got = share.PollFetches(ctx).Records(); ctx.Err() != nil {
			t.Fatal("the share member read nothing")
		}
	}
	for _, rec := range got {
		if rec.Offset < 4 {
			rec.Ack(kgo.AckAccept)
		}
	}
	if err := share.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	return k
}

// Every group type end to end: the groups API lists a classic, a KIP-848 and a share group with
// their types; the KIP-848 group with its live member, epochs, assignment and lag (4, 7, 10 of
// 10: 9), judged STALL when its commits do not move; the share group with its member, its
// share-partition start offset (4) and the broker's lag (6) and no committed offset, STALL in its
// own words; both on the overview. In chromium the share group's page shows the start offset,
// the member and its epoch, and no skip form; the KIP-848 group's page its member's epoch.
func TestEveryGroupTypeEndToEnd(t *testing.T) {
	ctx := waittest.Context(t, 3*time.Minute)
	k := groupTypesWorld(t, ctx)
	consoleStarted := time.Now().Truncate(time.Second)
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
sampler: {interval: 1s}
kafka: [{name: main, brokers: [%q], lag: {window: 3s, stop_after: 1h}}]
`, pgtest.NewDatabase(t), k.Addrs()[0]))

	list := waittest.For(t, time.Minute, "all three groups listed and both live ones STALL", func() (map[string]typedGroup, bool) {
		r := do(t, nil, "GET", base+"/api/v1/kafka/main/groups", "", "")
		l := decode[struct {
			Groups []typedGroup `json:"groups"`
		}](t, r)
		out := map[string]typedGroup{}
		for _, g := range l.Groups {
			out[g.Group] = g
		}
		return out, len(out) == 3 && out["shipping"].Status == "STALL" && out["mailer"].Status == "STALL"
	})
	if g := list["billing"]; g.Type != "classic" || g.TotalLag != 24 || g.GroupEpoch != nil {
		t.Errorf("billing: %+v", g)
	}
	if g := list["shipping"]; g.Type != "consumer" || g.Members != 1 || g.TotalLag != 9 || g.GroupEpoch == nil || *g.GroupEpoch <= 0 {
		t.Errorf("shipping: %+v", g)
	}
	if g := list["mailer"]; g.Type != "share" || g.Members != 1 || g.TotalLag != 6 {
		t.Errorf("mailer: %+v", g)
	}

	// The answers for every type are what the OpenAPI document says (its schemas forbid unknown
	// fields).
	doc := loadOpenAPI(t, base)
	for template, path := range map[string]string{
		"/api/v1/kafka/{cluster}/groups":          "/api/v1/kafka/main/groups",
		"/api/v1/kafka/{cluster}/groups/{group}":  "/api/v1/kafka/main/groups/shipping",
		"/api/v1/kafka/{cluster}/groups/{group}/": "/api/v1/kafka/main/groups/mailer",
	} {
		r := do(t, nil, "GET", base+path, "", "")
		op := doc.Paths.Find(strings.TrimSuffix(template, "/")).Get
		var v any
		if err := json.Unmarshal([]byte(r.body), &v); err != nil {
			t.Fatal(err)
		}
		if err := op.Responses.Status(r.status).Value.Content.Get("application/json").Schema.Value.VisitJSON(v); err != nil {
			t.Errorf("GET %s does not match web/openapi.yaml: %v\n%.2000s", path, err, r.body)
		}
	}

	shipping := decode[typedGroup](t, do(t, nil, "GET", base+"/api/v1/kafka/main/groups/shipping", "", ""))
	if len(shipping.MemberList) != 1 || shipping.MemberList[0].ClientID != "worker-848" || shipping.MemberList[0].MemberEpoch == nil ||
		*shipping.MemberList[0].MemberEpoch <= 0 || len(shipping.MemberList[0].Assigned) != 1 || len(shipping.MemberList[0].Assigned[0].Partitions) != 3 {
		t.Errorf("shipping's members: %+v", shipping.MemberList)
	}
	for i, want := range []int64{4, 7, 10} {
		p := shipping.Topics[0].Partitions[i]
		if p.Committed == nil || *p.Committed != want || p.Lag != 10-want || p.ShareStartOffset != nil || !strings.HasPrefix(p.Member, "worker-848@") {
			t.Errorf("shipping orders/%d: %+v", i, p)
		}
	}
	if !strings.Contains(shipping.Reason, "committed offset") || shipping.MaxLagSeconds == nil || *shipping.MaxLagSeconds < 500 {
		t.Errorf("shipping: reason %q, time lag %v", shipping.Reason, shipping.MaxLagSeconds)
	}
	hist := do(t, nil, "GET", base+"/api/v1/kafka/main/groups/shipping/history?since=1h", "", "")
	if hist.status != 200 || !strings.Contains(hist.body, `"total_lag":9`) {
		t.Errorf("shipping's history: %d %s", hist.status, hist.body)
	}

	r := do(t, nil, "GET", base+"/api/v1/kafka/main/groups/mailer", "", "")
	mailer := decode[typedGroup](t, r)
	if r.status != 200 || mailer.Type != "share" || mailer.Members != 1 || len(mailer.MemberList) != 1 || mailer.MemberList[0].ClientID != "share-worker" {
		t.Fatalf("the share group's API: %d %s", r.status, r.body)
	}
	p := mailer.Topics[0].Partitions[0]
	if p.ShareStartOffset == nil || *p.ShareStartOffset != 4 || p.Lag != 6 || p.Committed != nil || p.End != 10 {
		t.Errorf("mailer jobs/0: %+v", p)
	}
	if !strings.Contains(mailer.Reason, "start offset stuck at 4") || strings.Contains(mailer.Reason, "commit") ||
		mailer.DeliveryCountLimit == nil || *mailer.DeliveryCountLimit != 5 {
		t.Errorf("mailer: reason %q, delivery limit %v", mailer.Reason, mailer.DeliveryCountLimit)
	}
	overview := do(t, nil, "GET", base+"/api/v1/overview", "", "").body
	for _, want := range []string{"main/shipping is STALL", "main/mailer is STALL", "Share group mailer"} {
		if !strings.Contains(overview, want) {
			t.Errorf("the overview does not say %q: %s", want, overview)
		}
	}
	// Each STALL began where the samples first show its offsets where they still are: after the
	// console started sampling and at least a window (3 s) before the check, not at the check.
	o := decode[struct {
		CheckedAt time.Time `json:"checked_at"`
		Problems  []struct {
			Labels map[string]string `json:"labels"`
			Since  *time.Time        `json:"since"`
		} `json:"problems"`
	}](t, do(t, nil, "GET", base+"/api/v1/overview", "", ""))
	for _, p := range o.Problems {
		if g := p.Labels["group"]; g == "shipping" || g == "mailer" {
			if p.Since == nil || p.Since.Before(consoleStarted) || p.Since.After(o.CheckedAt.Add(-3*time.Second)) {
				t.Errorf("%s's problem since %v: want between the console's start %v and 3 s before the check %v", g, p.Since, consoleStarted, o.CheckedAt)
			}
			if api := decode[typedGroup](t, do(t, nil, "GET", base+"/api/v1/kafka/main/groups/"+g, "", "")); p.Since != nil &&
				(api.StatusSince == nil || !api.StatusSince.Equal(*p.Since)) {
				t.Errorf("%s's status_since %v, its problem's since %v", g, api.StatusSince, p.Since)
			}
		}
	}
	if g := list["billing"]; g.StatusSince != nil {
		t.Errorf("billing (%s) has a status_since: %v", g.Status, g.StatusSince)
	}
	// An offset move of the share group is refused (it has no offsets); the page offers none.
	if r := do(t, nil, "POST", base+"/api/v1/kafka/main/groups/mailer/offsets/plan", "application/json",
		`{"topic":"jobs","to":{"kind":"latest"}}`); r.status != 400 || !strings.Contains(r.body, "share group") {
		t.Errorf("an offset plan for the share group: %d %s", r.status, r.body)
	}

	bctx, _ := newBrowser(t)
	act(t, bctx, chromedp.Navigate(base+"/kafka/main/groups/mailer"))
	waitText(t, bctx, "share group")
	if got := must(t, bctx, chromedp.Text(`[data-testid=share-start-offset]`)); got != "4" {
		t.Errorf("the share group's page shows start offset %q", got)
	}
	if n := countOf(t, bctx, `[data-testid=skip-form]`); n != 0 {
		t.Errorf("%d skip forms on a share group's page", n)
	}
	head := must(t, bctx, chromedp.Text(`#partitions thead`))
	if strings.Contains(head, "Committed") || !strings.Contains(head, "Start offset") {
		t.Errorf("the share group's partitions table heads %q", head)
	}
	stats := strings.ToLower(must(t, bctx, chromedp.Text(`[data-testid=group-stats]`)))
	if !regexp.MustCompile(`oldest unacknowledged\n\d+ min`).MatchString(stats) || !strings.Contains(stats, "delivery limit\n5 attempts") {
		t.Errorf("the share group's stats: %q", stats)
	}
	if got := must(t, bctx, chromedp.Text(`[data-testid=member-row]`)); !strings.Contains(got, "share-worker") {
		t.Errorf("the share group's member row: %q", got)
	}
	screenshot(t, bctx, "kafka-share-group")

	act(t, bctx, chromedp.Navigate(base+"/kafka/main/groups/shipping"))
	waitText(t, bctx, "consumer group (KIP-848)")
	if got := must(t, bctx, chromedp.Text(`[data-testid=member-epoch]`)); got == "" || got == "0" {
		t.Errorf("the KIP-848 member's epoch on the page: %q", got)
	}
	if got := must(t, bctx, chromedp.Text(`[data-testid=member-assigned]`)); got != "orders 0–2" {
		t.Errorf("the KIP-848 member's assignment on the page: %q", got)
	}
	if got := must(t, bctx, chromedp.Text(`[data-testid=group-status-since]`)); !regexp.MustCompile(`^· STALL since (\d+ s|\d+ min) ago$`).MatchString(got) {
		t.Errorf("the KIP-848 group's status since on the page: %q", got)
	}
	screenshot(t, bctx, "kafka-kip848-group")

	act(t, bctx, chromedp.Navigate(base+"/kafka/main"))
	waitText(t, bctx, "mailer")
	types := must(t, bctx, chromedp.Evaluate[string](`[...document.querySelectorAll('[data-testid=group-type]')].map(e => e.innerText).sort().join(',')`))
	if types != "classic,consumer,share" {
		t.Errorf("the cluster page's types: %q", types)
	}
}
