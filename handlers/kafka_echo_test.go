package handlers

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/lag"
)

// sampledOnce is a lag snapshot of cluster main taken now, with no group in it.
type sampledOnce struct{}

func (sampledOnce) LatestKafka(context.Context, string) (lag.Snapshot, error) {
	return lag.Snapshot{Cluster: "main", At: time.Now()}, nil
}

func (sampledOnce) KafkaGroupHistory(context.Context, string, string, time.Time, int) ([]lag.Point, error) {
	return nil, nil
}

// A 100,000-character topic or group name came back whole in its 404 (several times over): a
// message quotes at most kafka.EchoLimit bytes of it, "…" marking the cut.
func TestKafkaNotFoundQuotesLongNamesCut(t *testing.T) {
	broker := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders.DLT"))
	k, err := kafka.New(configs.KafkaCluster{Name: "main", Brokers: broker.ListenAddrs()}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	h := NewKafka([]KafkaCluster{k}, sampledOnce{}, nil, nil, nil)
	long := strings.Repeat("a", 100_000)
	call := func(handler echo.HandlerFunc, names ...string) error {
		c := echo.New().NewContext(httptest.NewRequest("GET", "/x?partition=0", nil), httptest.NewRecorder())
		c.SetParamNames(append([]string{"cluster"}, names...)...)
		values := []string{"main"}
		for range names {
			values = append(values, long)
		}
		c.SetParamValues(values...)
		return handler(c)
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
