package trace_test

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/rabbittest"
)

// openBroker opens the test broker's vhost with ids and waits, up to within, until the management
// API's topology shows what the test published (it counts messages a few seconds late), as ready
// tells; what names that for a failure.
func openBroker(t *testing.T, vhost string, ids configs.MessageIDRules, within time.Duration, what string, ready func(rabbit.Topology) bool) *rabbit.Broker {
	t.Helper()
	b, err := rabbit.New(rabbittest.Config(t, vhost), ids)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	rabbittest.WaitFor(t, within, what, func(ctx context.Context) bool {
		topo, err := b.Topology(ctx)
		return err == nil && ready(topo)
	})
	return b
}
