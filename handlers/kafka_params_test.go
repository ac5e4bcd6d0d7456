package handlers

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
)

// kafkaRecordsFixture is the records API (with its filter scan in front, as web routes it) over
// a kfake cluster whose orders.DLT has 2 partitions and 3 records in partition 0.
func kafkaRecordsFixture(t *testing.T) func(query string) error {
	t.Helper()
	broker := kfaketest.Cluster(t, kfake.SeedTopics(2, "orders.DLT"))
	prod := kfaketest.Client(t, broker, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for range 3 {
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: "orders.DLT", Value: []byte(`{}`)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	k, err := kafka.New(configs.KafkaCluster{Name: "main", Brokers: broker.ListenAddrs()}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	h := NewKafka([]KafkaCluster{k}, nil, nil, nil, nil)
	records := NewSearch(SearchOptions{Kafka: []SearchCluster{k}}).Records(h.APIRecords)
	return func(query string) error { return records(queryContext("/records?" + query)) }
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
