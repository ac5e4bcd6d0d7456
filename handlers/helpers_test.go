package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
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

// bodyContext is a POST of body as JSON.
func bodyContext(body string) echo.Context {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	return echo.New().NewContext(req, httptest.NewRecorder())
}

// decodedThen decodes body as a POST's JSON into an R (decodeJSON), then checks it: the first
// error of the two.
func decodedThen[R any](body string, check func(R) error) error {
	var req R
	if err := decodeJSON(bodyContext(body), &req); err != nil {
		return err
	}
	return check(req)
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
