package handlers

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/storetest"
)

// auditFixture is an outbox with one DEAD event and a store, in the same database or in two.
func auditFixture(t *testing.T, shared bool) (*Outboxes, *store.Store, string, int64) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	storeDSN := dsn
	if !shared {
		storeDSN = pgtest.NewDatabase(t)
	}
	pgtest.Exec(t, dsn, outbox.SeedDDL)
	pgtest.Exec(t, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, created_at) VALUES ('e-1', 'Order', 'o-1', 'OrderCreated', 1, '{}', 'DEAD', 5, now(), now())`)
	cfg, err := configs.Parse([]byte("auth: {mode: none}\nstore: {dsn: \""+storeDSN+"\"}\noutboxes: [{name: orders, dsn: \""+dsn+"\"}]\n"),
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	o, err := outbox.Open(ctx, cfg.Outboxes[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	st := storetest.On(t, storeDSN)
	return NewOutboxes([]OutboxService{o}, st, nil, nil), st, dsn, 1
}

func status(t *testing.T, dsn string, id int64) string {
	t.Helper()
	return pgtest.Value[string](t, dsn, `SELECT status FROM outbox_event WHERE id = $1`, id)
}

func postRequeue(h *Outboxes, ua string) (*httptest.ResponseRecorder, error) {
	return postOutboxJSON(h.APIRequeue, "/api/v1/outboxes/orders/events/requeue", `{"ids":[1],"reason":"fix\u0000 deployed \udcff"}`, ua)
}

// A requeue with a 0xFF user agent and a NUL reason is applied and audited, in the same database
// as the change or in another; with the store down it is neither.
func TestRequeueAuditBeforeEffect(t *testing.T) {
	for _, shared := range []bool{true, false} {
		name := "SeparateStore"
		if shared {
			name = "SharedDatabase"
		}
		t.Run(name, func(t *testing.T) {
			h, st, dsn, id := auditFixture(t, shared)
			if _, err := postRequeue(h, "curl/8\xff\x00"); err != nil {
				t.Fatalf("requeue: %v", err)
			}
			if s := status(t, dsn, id); s != "READY" {
				t.Fatalf("status %s, want READY", s)
			}
			entries, err := st.ListAudit(context.Background(), audit.Filter{Action: "outbox.requeue", Intents: true})
			if err != nil || len(entries) != 2 {
				t.Fatalf("audit rows %+v, %v: want the intent and its outcome", entries, err)
			}
			ok, intent := entries[0], entries[1]
			if intent.Outcome != audit.OutcomeStarted || ok.Outcome != audit.OutcomeOK || ok.Count == nil || *ok.Count != 1 ||
				ok.Detail["intent_id"] != float64(intent.ID) || strings.ContainsRune(ok.Reason, 0) {
				t.Errorf("intent %+v, outcome %+v", intent, ok)
			}
		})
	}
	t.Run("StoreDown", func(t *testing.T) {
		h, st, dsn, id := auditFixture(t, false)
		st.Close()
		_, err := postRequeue(h, "curl/8")
		if !errors.Is(err, ops.ErrUnavailable) || !strings.Contains(err.Error(), "the audit log cannot be written, so nothing was changed") {
			t.Fatalf("err %v: want a 503 saying nothing was changed", err)
		}
		if s := status(t, dsn, id); s != "DEAD" {
			t.Fatalf("status %s: the change was made without its audit row", s)
		}
	})
}
