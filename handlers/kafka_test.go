package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kafka/schema"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/search"
	"github.com/redrive/redrive/ops/trace"
	"github.com/redrive/redrive/views/layout"
)

// kafkaRecordsFixture is the records API (with its filter scan in front, as web routes it) over
// a kfake cluster whose orders.DLT has 2 partitions and 3 records in partition 0.
func kafkaRecordsFixture(t *testing.T) func(query string) error {
	t.Helper()
	k := dltCluster(t, 2, `{}`, `{}`, `{}`)
	h := NewKafka([]KafkaCluster{k}, nil, nil, nil, nil)
	records := NewSearch(SearchOptions{Kafka: []SearchCluster{k}}).Records(h.APIRecords)
	return func(query string) error { return records(queryContext("/records?" + query)) }
}

// queryContext is a GET of target on the records of topic orders.DLT.
func queryContext(target string) echo.Context {
	c := echo.New().NewContext(httptest.NewRequest("GET", target, nil), httptest.NewRecorder())
	c.SetParamNames("cluster", "topic")
	c.SetParamValues("main", "orders.DLT")
	return c
}

type noTracer struct{}

func (noTracer) Trace(context.Context, trace.Query) (trace.Result, error) { return trace.Result{}, nil }

// sampledOnce is a lag snapshot of cluster main taken now, with no group in it.
type sampledOnce struct{}

func (s sampledOnce) LatestKafka(context.Context, string) (lag.Snapshot, error) {
	return lag.Snapshot{Cluster: "main", At: time.Now()}, nil
}

// FreshKafka is LatestKafka: nothing here re-samples.
func (s sampledOnce) FreshKafka(ctx context.Context, cluster string) (lag.Snapshot, error) {
	return s.LatestKafka(ctx, cluster)
}

func (sampledOnce) KafkaGroupHistory(context.Context, string, string, time.Time, int) ([]lag.Point, error) {
	return nil, nil
}

// Parameters the records API ignored with one partition and no filter (a bad cursor read as the
// first page, stream=maybe) and an empty offset range of a filter (200 with nothing) are 400s
// saying what to give.
func TestRecordsParametersAreChecked(t *testing.T) {
	records := kafkaRecordsFixture(t)
	malformed := "cursor: must be partition:offset pairs separated by commas, as in the previous page's next_cursor"
	onePartition := "cursor: continues a page of partition=all or a filter's scan; with one partition, give the previous page's next_offset as offset"
	for query, want := range map[string]string{
		"cursor=bogus":                                      malformed,
		"cursor=-1:5":                                       malformed,
		"partition=0&cursor=9:5":                            onePartition,
		"cursor=0:99999999999999999999":                     malformed,
		"partition=1&cursor=0:1":                            onePartition,
		"stream=maybe":                                      "stream: must be true or false",
		"partition=all&stream=maybe":                        "stream: must be true or false",
		"filter=true&from_offset=10&to_offset=5":            "to_offset: must not be below from_offset (10): the range is inclusive, so this one holds nothing",
		"filter=true&partition=0&from_offset=2&to_offset=1": "to_offset: must not be below from_offset (2)",
	} {
		if err := records(query); !errors.Is(err, ops.ErrInvalid) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want a 400 saying %q", query, err, want)
		}
	}
	for _, query := range []string{"", "partition=0&stream=true", "partition=all&cursor=0:1", "partition=0&offset=1",
		"filter=" + url.QueryEscape("true") + "&from_offset=1&to_offset=1", "filter=true&partition=0&cursor=0:1"} {
		if err := records(query); err != nil {
			t.Errorf("%s: %v, want a page", query, err)
		}
	}
}

// A plain page of records (no filter) ignored the scan's range and bound: from_offset=70&
// to_offset=72 answered the newest records as if no range had been asked for, and
// from_offset=abc or max_scan=abc was a 200. They are 400s naming the parameter; with a filter
// they still read the range.
func TestRecordsRangeWithoutFilterIsRefused(t *testing.T) {
	records := kafkaRecordsFixture(t)
	for _, query := range []string{"partition=0&from_offset=1&to_offset=2", "from_offset=abc", "to_offset=-4",
		"partition=all&to_offset=1", "max_scan=abc", "partition=0&max_scan=10"} {
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(query, "partition=0&"), "partition=all&"), "=")
		if err := records(query); !errors.Is(err, ops.ErrInvalid) || !strings.HasPrefix(err.Error(), name+": is read only by a filter's scan") {
			t.Errorf("%s: %v, want a 400 naming %s", query, err, name)
		}
	}
	for _, query := range []string{"filter=true&partition=0&from_offset=1&to_offset=2", "filter=true&max_scan=10", "partition=0&offset=1"} {
		if err := records(query); err != nil {
			t.Errorf("%s: %v, want a page", query, err)
		}
	}
}

// A time is given or not by its presence: at=0001-01-01T00:00:00Z (time.Time's zero) was read as
// no at, and since=0001-01-01 as no since.
func TestYearOneIsATime(t *testing.T) {
	q, err := parseRecordQuery(queryContext("/records?at=0001-01-01T00:00:00Z"))
	if err != nil || q.At == nil || !q.At.IsZero() {
		t.Errorf("at=0001-01-01T00:00:00Z: at %v, %v; want the time 0001-01-01", q.At, err)
	}
	if q, err := parseRecordQuery(queryContext("/records?at=")); err != nil || q.At != nil {
		t.Errorf("at= (blank): at %v, %v; want none", q.At, err)
	}
	h := &Trace{t: noTracer{}}
	tq, err := h.parseTraceQuery(queryContext("/trace?message_id=m&since=0001-01-01&until=0001-01-01T00:00:00Z"))
	if err != nil || tq.Since == nil || !tq.Since.IsZero() || tq.Until == nil || !tq.Until.Equal(time.Time{}) {
		t.Errorf("since and until 0001-01-01: %v %v, %v; want both given", tq.Since, tq.Until, err)
	}
	if tq, err := h.parseTraceQuery(queryContext("/trace?message_id=m")); err != nil || tq.Since != nil || tq.Until != nil {
		t.Errorf("no since nor until: %v %v, %v; want neither", tq.Since, tq.Until, err)
	}
}

// A 100,000-character topic or group name came back whole in its 404 (several times over): a
// message quotes at most kafka.EchoLimit bytes of it, "…" marking the cut.
func TestKafkaNotFoundQuotesLongNamesCut(t *testing.T) {
	k := dltCluster(t, 1)
	h := NewKafka([]KafkaCluster{k}, sampledOnce{}, nil, nil, nil)
	long := strings.Repeat("a", 100_000)
	call := func(handler echo.HandlerFunc, names ...string) error {
		values := []string{"main"}
		for range names {
			values = append(values, long)
		}
		_, err := callAPI(t, handler, "/x?partition=0", append([]string{"cluster"}, names...), values...)
		return err
	}
	cut := strings.Repeat("a", kafka.EchoLimit) + "…"
	for name, err := range map[string]error{
		"records":      call(h.APIRecords, "topic"),
		"error groups": call(h.APIErrorGroups, "topic"),
		"group":        call(h.APIGroup, "group"),
	} {
		msg := ops.Message(err)
		if !errors.Is(err, ops.ErrNotFound) || !strings.Contains(msg, cut) || len(msg) > 3*len(cut)+200 {
			t.Errorf("%s: %d bytes: %.300q; want a 404 quoting the name cut to %d bytes", name, len(msg), msg, kafka.EchoLimit)
		}
	}
}

// A cluster or broker name that is not configured is quoted back cut, as topic and group names are.
func TestUnknownSourceQuotedCut(t *testing.T) {
	_, err := lookup(map[string]int{"main": 1}, strings.Repeat("c", 100_000), "kafka cluster")
	if m := ops.Message(err); !errors.Is(err, ops.ErrNotFound) || len(m) > 200 || !strings.Contains(m, "…") {
		t.Fatalf("unknown cluster: %v (%d bytes)", errors.Is(err, ops.ErrNotFound), len(m))
	}
}

func TestRecordJSONSchemaFields(t *testing.T) {
	t.Run("Undecoded", func(t *testing.T) {
		out, _ := json.Marshal(toRecordJSON(kafka.Record{Value: []byte(`{"a":1}`)}, false))
		if !strings.Contains(string(out), `"value_schema":null`) || !strings.Contains(string(out), `"key_schema":null`) {
			t.Errorf("%s", out)
		}
	})
	t.Run("Failed", func(t *testing.T) {
		r := kafka.Record{Value: []byte{0, 0, 0, 0, 9, 0xff}, ValueSchema: &schema.Decoded{ID: 9, Error: "schema 9: not found in the schema registry"}}
		j := toRecordJSON(r, false)
		if j.ValueSchema.Error == "" || j.ValueEncoding != "base64" {
			t.Errorf("%+v %s", j.ValueSchema, j.ValueEncoding)
		}
	})
	t.Run("Raw", func(t *testing.T) {
		r := kafka.Record{Value: []byte("\x00\x00\x00\x00\x05{}"), ValueSchema: &schema.Decoded{Format: schema.FormatJSONSchema, ID: 5, JSON: []byte(`{}`)}}
		if j := toRecordJSON(r, true); j.ValueEncoding != "base64" || *j.Value != "AAAAAAV7fQ==" {
			t.Errorf("raw: %s %s", *j.Value, j.ValueEncoding)
		}
		if j := toRecordJSON(r, false); j.ValueEncoding != "json" || *j.Value != `{}` {
			t.Errorf("decoded: %s %s", *j.Value, j.ValueEncoding)
		}
	})
}

// A cursor of partition=all naming a partition orders.DLT does not have (cursor=9:1), or an
// offset past a partition's end (a cursor from before the topic was recreated), was a 200 with
// no records and no next_cursor, the end of the topic: it is a 400 saying to start again.
func TestAcrossCursorOutsideTheTopic(t *testing.T) {
	records := kafkaRecordsFixture(t) // orders.DLT: partitions 0 (3 records) and 1 (empty)
	for query, want := range map[string]string{
		"partition=all&cursor=9:1":              "cursor: partition 9 is not in orders.DLT (partitions 0–1); start again without a cursor",
		"partition=all&cursor=0:1,2:0":          "cursor: partition 2 is not in orders.DLT (partitions 0–1); start again without a cursor",
		"partition=all&cursor=0:50":             "cursor: the cursor is past the end of partition 0: the topic may have been recreated; start again without a cursor",
		"partition=all&order=oldest&cursor=1:7": "cursor: the cursor is past the end of partition 1: the topic may have been recreated; start again without a cursor",
	} {
		if err := records(query); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("%s: %v, want a 400 saying %q", query, err, want)
		}
	}
	// A page's own next cursors still go on: the end of a partition read oldest first.
	for _, query := range []string{"partition=all&order=oldest&cursor=0:3", "partition=all&cursor=0:2,1:0"} {
		if err := records(query); err != nil {
			t.Errorf("%s: %v, want a page", query, err)
		}
	}
}

// The error groups' Records link was ?exception=<type> alone: two groups of one type with
// different causes linked to the same list of both, a type with a NUL linked to a 400 and a
// non-UTF-8 type to no records. The link carries the cause too, both as the groups are keyed
// (cleaned), and the topic page compares on that text: each link lists exactly its group.
func TestErrorGroupLinksListTheirGroup(t *testing.T) {
	dl := func(typ, cause string) *kgo.Record {
		return &kgo.Record{Topic: "orders.DLT", Value: []byte("{}"), Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-exception-fqcn", Value: []byte(typ)}, {Key: "kafka_dlt-exception-cause-fqcn", Value: []byte(cause)}}}
	}
	want := map[string]int{"E.Same|NullPointerException": 2, "E.Same|IllegalArgumentException": 1, "E.NulType|": 1, "E.\uFFFDbad|": 3}
	k := dltClusterOf(t, 1, dl("E.Same", "NullPointerException"), dl("E.Same", "IllegalArgumentException"),
		dl("E.Same", "NullPointerException"), dl("E.Nul\x00Type", ""), dl("E.\xffbad", ""), dl("E.\xffbad", ""), dl("E.\xfebad", ""))
	h := NewKafka([]KafkaCluster{k}, sampledOnce{}, func(echo.Context, string, string) layout.Meta { return layout.Meta{} }, nil, nil)
	rec, err := callAPI(t, h.ErrorsPage, "/errors", []string{"cluster", "topic"}, "main", "orders.DLT")
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`<a class="btn btn-sm" href="([^"]*)" data-testid="group-records"`).FindAllStringSubmatch(rec.Body.String(), -1)
	if len(links) < 4 {
		t.Fatalf("%d Records links, want one per group", len(links))
	}
	seen := map[string]bool{}
	for _, l := range links {
		u, err := url.Parse(html.UnescapeString(l[1]))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		group := q.Get("exception") + "|" + q.Get("cause")
		page, err := callAPI(t, h.TopicPage, "/?"+u.RawQuery+"&state=all", []string{"cluster", "topic"}, "main", "orders.DLT")
		if err != nil {
			t.Errorf("%s: %v", u, err)
			continue
		}
		rows := strings.Count(page.Body.String(), `data-testid="row-exception"`)
		if n, ok := want[group]; !ok || rows != n {
			t.Errorf("%s lists %d records (group %q), want %d", u, rows, group, n)
		}
		seen[group] = true
	}
	if len(seen) != len(want) {
		t.Errorf("groups linked %v, want %v", seen, want)
	}
}

// A filter's scan read every resolution state whatever state= said (on the demo's orders.DLT,
// state=resolved matched all 241 records, none of them resolved), and offset= and at= were
// ignored (filter=true&partition=0&offset=5 answered offsets 80, 79, 78…): state keeps the
// records in that state, as a page of records does, and offset and at are 400s saying what a
// scan reads instead.
func TestRecordsScanKeepsStateAndRefusesPageParameters(t *testing.T) {
	k := dltCluster(t, 1, `{"n":0}`, `{"n":1}`, `{"n":2}`, `{"n":3}`)
	marks := map[int64]string{1: "resolved", 3: "replayed"}
	lookup := func(context.Context, string, string) search.ResolutionOf {
		return func(_ int32, o int64) (string, error) {
			if s, ok := marks[o]; ok {
				return s, nil
			}
			return "open", nil
		}
	}
	records := NewSearch(SearchOptions{Kafka: []SearchCluster{k}, Resolutions: lookup}).
		Records(NewKafka([]KafkaCluster{k}, nil, nil, nil, nil).APIRecords)
	scan := func(query string) ([]int64, int64, error) {
		rec, err := callAPI(t, records, "/records?"+query, []string{"cluster", "topic"}, "main", "orders.DLT")
		if err != nil {
			return nil, 0, err
		}
		var out struct {
			Records []struct {
				Offset int64 `json:"offset"`
			} `json:"records"`
			Matched int64  `json:"matched"`
			Filter  string `json:"filter"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if out.Filter == "" {
			t.Fatalf("%s: not a scan: %s", query, rec.Body)
		}
		offsets := []int64{}
		for _, r := range out.Records {
			offsets = append(offsets, r.Offset)
		}
		return offsets, out.Matched, nil
	}
	for query, want := range map[string][]int64{
		"filter=true":                            {3, 2, 1, 0},
		"filter=true&state=all":                  {3, 2, 1, 0},
		"filter=true&state=open":                 {2, 0},
		"filter=true&state=resolved":             {1},
		"filter=true&partition=0&state=replayed": {3},
		"filter=true&state=ignored":              {},
		"filter=" + url.QueryEscape("offset > 0") + "&state=open&order=oldest":  {2},
		"filter=" + url.QueryEscape(`resolution == "open"`) + "&state=resolved": {},
	} {
		got, matched, err := scan(query)
		if err != nil || !slices.Equal(got, want) || matched != int64(len(want)) {
			t.Errorf("%s: offsets %v (matched %d), %v; want %v", query, got, matched, err, want)
		}
	}
	for query, want := range map[string]string{
		"filter=true&state=bogus":          "state: must be open, resolved, ignored, replayed or all",
		"filter=true&partition=0&offset=2": "offset: is read only by a page of records (no filter): a filter's scan reads the offsets from_offset to to_offset",
		"filter=true&at=2020-01-01":        "at: is read only by a page of records (no filter): a filter's scan selects by time in the filter",
		"filter=true&partition=all&at=15m": "at: is read only by a page of records",
		"filter=true&stream=true&offset=0": "offset: is read only by a page of records",
	} {
		if _, _, err := scan(query); !errors.Is(err, ops.ErrInvalid) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want a 400 saying %q", query, err, want)
		}
	}
}

// A topic page given a filter and no partition (a shared link: orders.DLT?filter=true) scanned
// and exported every partition while its partition choice said 0 and its "Plan replay of the
// matches" planned partition 0 alone (240 matched on the demo, 80 planned). Such a page is the
// page of every partition: the choice says all, and the plan of the matches names no partition,
// as the scan. With a partition given, all three keep it.
func TestTopicSearchWithoutPartitionReadsEveryPartition(t *testing.T) {
	k := dltClusterOf(t, 2, &kgo.Record{Topic: "orders.DLT", Partition: 0, Value: []byte("{}")},
		&kgo.Record{Topic: "orders.DLT", Partition: 1, Value: []byte("{}")})
	h := NewKafka([]KafkaCluster{k}, sampledOnce{}, func(echo.Context, string, string) layout.Meta { return layout.Meta{CanOperate: true} }, nil, nil)
	planForm := regexp.MustCompile(`(?s)<form method="post" action="/replays/plan" data-testid="plan-matches">.*?</form>`)
	for query, partition := range map[string]string{"filter=true": "all", "filter=true&partition=all": "all", "filter=true&partition=1": "1"} {
		rec, err := callAPI(t, h.TopicPage, "/?"+query, []string{"cluster", "topic"}, "main", "orders.DLT")
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		body := rec.Body.String()
		scan := regexp.MustCompile(`data-scan="([^"]*)"`).FindStringSubmatch(body)
		form := planForm.FindString(body)
		if scan == nil || form == "" {
			t.Fatalf("%s: no scan panel or plan of the matches", query)
		}
		if !strings.Contains(html.UnescapeString(scan[1]), "partition="+partition) {
			t.Errorf("%s: the scan reads %s, want partition=%s", query, scan[1], partition)
		}
		planned := regexp.MustCompile(`name="partition" value="(\d+)"`).FindStringSubmatch(form)
		switch {
		case partition == "all" && planned != nil:
			t.Errorf("%s: the plan of the matches names partition %s while the scan reads every partition", query, planned[1])
		case partition != "all" && (planned == nil || planned[1] != partition):
			t.Errorf("%s: the plan of the matches names partition %v, want %s", query, planned, partition)
		}
		if !strings.Contains(body, `<option value="`+partition+`" selected>`) {
			t.Errorf("%s: the partition choice does not say %s", query, partition)
		}
	}
}
