package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/store"
)

// A RabbitMQ job looks its plan's items up by locator (PlanItemsByLocator) right after the plan was
// written, long before autovacuum knows of it. AnalyzePlanItems, which analyzes only the columns
// the look-up's conditions name, must be enough for PostgreSQL to find them by their locators
// rather than read the whole plan: the plan's look-up is explained beside older, analyzed plans.
func TestLookupByLocatorAfterAnalyze(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	const n = 5000
	write := func(id string) {
		w, err := st.BeginPlan(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		items := make([]replay.StoredItem, n)
		for i := range items {
			mid := fmt.Sprintf("%s-%d", id, i)
			items[i] = replay.StoredItem{Seq: i, Locator: "rabbitmq:main/%2F/orders.dlq/" + mid + "~0123456789abcdef#0", MessageID: mid,
				Destination: []byte(`{"exchange":"orders","routing_key":"order.created"}`), Inbox: "not_processed", Action: string(replay.Publish)}
		}
		if err := w.Add(ctx, items); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(ctx, replay.StoredPlan{ID: id, Actor: "t", Source: []byte(`{}`), Total: n}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"old-1", "old-2", "old-3"} {
		write(id)
	}
	if err := st.AnalyzePlanItems(ctx); err != nil {
		t.Fatal(err)
	}
	write("new")
	explain := func() string {
		rows, err := st.Pool().Query(ctx, "EXPLAIN "+store.PlanItemsByLocatorSQL, "new",
			[]string{"rabbitmq:main/%2F/orders.dlq/new-7~0123456789abcdef#0", "rabbitmq:main/%2F/orders.dlq/new-4000~0123456789abcdef#0"})
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range lines {
			lines[i] = strings.TrimSpace(l)
		}
		return strings.Join(lines, "\n")
	}
	t.Logf("before the analyze:\n%s", explain())
	if err := st.AnalyzePlanItems(ctx); err != nil {
		t.Fatal(err)
	}
	after := explain()
	var cond string
	for l := range strings.SplitSeq(after, "\n") {
		if strings.HasPrefix(l, "Index Cond:") {
			cond = l
		}
	}
	if !strings.Contains(cond, "locator") {
		t.Fatalf("after the analyze the look-up does not find the items by their locators:\n%s", after)
	}
}
