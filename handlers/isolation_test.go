package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
)

// txnDLTCluster is a cluster whose orders.DLT (one partition) holds the dead letters: 12
// single-record transactions, committed (c-0, c-2, …) and aborted (a-1, a-3, …) in turn, each a
// Spring dead letter of com.acme.StockException; 24 offsets.
func txnDLTCluster(t *testing.T) *kafka.Cluster {
	t.Helper()
	broker := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders.DLT"))
	for i := range 12 {
		commit := i%2 == 0
		v := fmt.Sprintf("a-%d", i)
		if commit {
			v = fmt.Sprintf("c-%d", i)
		}
		kfaketest.Transaction(t, broker, "listener-tx", commit, &kgo.Record{Topic: "orders.DLT", Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")},
				{Key: "kafka_dlt-original-topic", Value: []byte("orders")}}})
	}
	k, err := kafka.New(configs.KafkaCluster{Name: "main", Brokers: broker.ListenAddrs(), DeadLetterTopics: []string{"*.DLT"}}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

// as calls h on target (cluster main, topic orders.DLT) as an actor of role.
func as(t *testing.T, h echo.HandlerFunc, role access.Role, target string) (*httptest.ResponseRecorder, error) {
	t.Helper()
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, target, nil), rec)
	c.SetParamNames("cluster", "topic")
	c.SetParamValues("main", "orders.DLT")
	SetActor(c, access.Actor{Name: role.String() + "-1", Role: role})
	return rec, h(c)
}

// The records API, the DLT list, the error groups and the export of the DLT (6 committed
// and 6 aborted records) answer the 6 committed and count records, not offsets; an admin's
// isolation=uncommitted page shows all 12 with the aborted ones marked, and a viewer or operator
// asking for it is refused (403), as is a scan asking for it (400).
func TestRecordsAPIReadsCommittedAndAdminsMayReadUncommitted(t *testing.T) {
	k := txnDLTCluster(t)
	h := NewKafka([]KafkaCluster{k}, nil, nil, nil, nil)
	s := NewSearch(SearchOptions{Kafka: []SearchCluster{k}, ExportMinRole: "viewer"})
	records := s.Records(h.APIRecords)

	rec, err := as(t, records, access.Viewer, "/records?order=oldest")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Records []struct {
			Offset  int64  `json:"offset"`
			Value   string `json:"value"`
			Aborted *bool  `json:"aborted"`
		} `json:"records"`
		End       int64  `json:"end"`
		Stable    int64  `json:"last_stable_offset"`
		Isolation string `json:"isolation"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, r := range page.Records {
		values = append(values, r.Value)
		if r.Aborted != nil {
			t.Errorf("a committed page marks %s aborted=%v", r.Value, *r.Aborted)
		}
	}
	if strings.Join(values, ",") != "c-0,c-2,c-4,c-6,c-8,c-10" || page.End != 24 || page.Stable != 24 || page.Isolation != "committed" {
		t.Errorf("committed page %v end %d stable %d isolation %q", values, page.End, page.Stable, page.Isolation)
	}

	for _, role := range []access.Role{access.Viewer, access.Operator} {
		if _, err := as(t, records, role, "/records?isolation=uncommitted"); !errors.Is(err, ops.ErrForbidden) ||
			err.Error() != "reading uncommitted records (isolation=uncommitted) needs the admin role" {
			t.Errorf("%s asking isolation=uncommitted: %v; want a 403", role, err)
		}
	}
	if _, err := as(t, records, access.Admin, "/records?isolation=sometimes"); !errors.Is(err, ops.ErrInvalid) {
		t.Errorf("isolation=sometimes: %v; want a 400", err)
	}
	if _, err := as(t, records, access.Admin, "/records?isolation=uncommitted&filter=true"); !errors.Is(err, ops.ErrInvalid) ||
		!strings.Contains(err.Error(), "isolation: uncommitted is read only by a page of records") {
		t.Errorf("a scan asking isolation=uncommitted: %v; want a 400", err)
	}
	rec, err = as(t, records, access.Admin, "/records?isolation=uncommitted&order=oldest")
	if err != nil {
		t.Fatal(err)
	}
	page.Records = nil
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	var aborted []string
	for _, r := range page.Records {
		if r.Aborted != nil && *r.Aborted {
			aborted = append(aborted, r.Value)
		}
	}
	if len(page.Records) != 12 || strings.Join(aborted, ",") != "a-1,a-3,a-5,a-7,a-9,a-11" || page.Isolation != "uncommitted" {
		t.Errorf("uncommitted page: %d records, aborted %v, isolation %q; want 12, the 6 a-*", len(page.Records), aborted, page.Isolation)
	}
	if rec, err := as(t, records, access.Admin, "/records?isolation=uncommitted&partition=all"); err != nil ||
		strings.Count(rec.Body.String(), `"aborted":true`) != 6 {
		t.Errorf("uncommitted across partitions: %v %s", err, rec.Body.String())
	}

	rec, err = as(t, h.APIDeadLetterTopics, access.Viewer, "/dlts")
	if err != nil {
		t.Fatal(err)
	}
	var dlts deadLetterTopicsJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &dlts); err != nil {
		t.Fatal(err)
	}
	if len(dlts.Topics) != 1 || dlts.Topics[0].Records != 6 || !dlts.Topics[0].Counted || dlts.Topics[0].PerPart[0].LastStableOffset != 24 ||
		dlts.Topics[0].PerPart[0].End != 24 {
		t.Errorf("dead-letter topics %s; want orders.DLT with 6 records, counted", rec.Body.String())
	}

	rec, err = as(t, h.APIErrorGroups, access.Viewer, "/error-groups")
	if err != nil {
		t.Fatal(err)
	}
	var groups kafkaErrorGroupsJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &groups); err != nil {
		t.Fatal(err)
	}
	if groups.Scanned != 6 || groups.Total != 6 || !groups.TotalExact || len(groups.Groups) != 1 || groups.Groups[0].Count != 6 {
		t.Errorf("error groups %s; want one group of 6 of 6", rec.Body.String())
	}

	rec, err = as(t, s.ExportKafka, access.Viewer, "/export?format=ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimSpace(rec.Body.String()), "\n") + 1; n != 6 || strings.Contains(rec.Body.String(), `"a-`) {
		t.Errorf("export: %d lines: %s; want the 6 committed", n, rec.Body.String())
	}
	if _, err := as(t, s.ExportKafka, access.Admin, "/export?format=ndjson&isolation=uncommitted"); !errors.Is(err, ops.ErrInvalid) {
		t.Errorf("an uncommitted export: %v; want a 400", err)
	}
}
