package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
)

// callAPI runs h on a GET of target with the path parameters names set to values.
func callAPI(t testing.TB, h echo.HandlerFunc, target string, names []string, values ...string) (*httptest.ResponseRecorder, error) {
	t.Helper()
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, target, nil), rec)
	c.SetParamNames(names...)
	c.SetParamValues(values...)
	return rec, h(c)
}

// dltCluster is the Kafka cluster "main" over a kfake cluster whose orders.DLT has partitions
// partitions and, in partition 0, one record of each of values; closed when t ends.
func dltCluster(t *testing.T, partitions int32, values ...string) *kafka.Cluster {
	t.Helper()
	records := make([]*kgo.Record, len(values))
	for i, v := range values {
		records[i] = &kgo.Record{Topic: "orders.DLT", Value: []byte(v)}
	}
	return dltClusterOf(t, partitions, records...)
}

// dltClusterOf is dltCluster with whole records (keys, headers), produced in order to the
// partition each names (0 when it names none).
func dltClusterOf(t *testing.T, partitions int32, records ...*kgo.Record) *kafka.Cluster {
	t.Helper()
	broker := kfaketest.Cluster(t, kfake.SeedTopics(partitions, "orders.DLT"))
	if len(records) > 0 {
		prod := kfaketest.Client(t, broker, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for _, r := range records {
			if err := prod.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	k, err := kafka.New(configs.KafkaCluster{Name: "main", Brokers: broker.ListenAddrs()}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}
