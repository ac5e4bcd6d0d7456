package configs

import (
	"strings"
	"testing"
	"time"
)

const withPools = minimal + `
outboxes: [{name: orders, dsn: "postgres://x@127.0.0.1/orders"}]
consumers: [{name: billing, inbox: {dsn: "postgres://x@127.0.0.1/billing"}}]
`

func TestPoolDefaults(t *testing.T) {
	cfg, err := Parse([]byte(withPools), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  string
		pool Pool
		want int
	}{
		{"store", cfg.Store.Pool, DefaultStoreMaxConns},
		{"outboxes[0]", cfg.Outboxes[0].Pool, DefaultOutboxMaxConns},
		{"consumers[0].inbox", cfg.Consumers[0].Inbox.Pool, DefaultInboxMaxConns},
	} {
		if tc.pool.MaxConns == nil || *tc.pool.MaxConns != tc.want {
			t.Errorf("%s.max_conns: got %v, want %d", tc.key, tc.pool.MaxConns, tc.want)
		}
		if tc.pool.AcquireTimeout == nil || tc.pool.AcquireTimeout.D() != 5*time.Second {
			t.Errorf("%s.acquire_timeout: got %v, want 5s", tc.key, tc.pool.AcquireTimeout)
		}
	}
	// A Config built in code (tests, tools) leaves them nil; Size and Wait give the defaults.
	var unset Pool
	if unset.Size(7) != 7 || unset.Wait() != DefaultAcquireTimeout {
		t.Errorf("unset pool: Size %d, Wait %s", unset.Size(7), unset.Wait())
	}
}

func TestPoolParse(t *testing.T) {
	cfg, err := Parse([]byte(`
auth: {mode: none}
store: {dsn: "postgres://u:p@127.0.0.1/redrive", max_conns: 32, acquire_timeout: 2s}
outboxes: [{name: orders, dsn: "postgres://x@127.0.0.1/orders", max_conns: 2, acquire_timeout: 1500ms}]
consumers: [{name: billing, inbox: {dsn: "postgres://x@127.0.0.1/billing", max_conns: 8, acquire_timeout: 10s}}]
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Store.Size(0); got != 32 || cfg.Store.Wait() != 2*time.Second {
		t.Errorf("store: %d %s", got, cfg.Store.Wait())
	}
	if got := cfg.Outboxes[0].Size(0); got != 2 || cfg.Outboxes[0].Wait() != 1500*time.Millisecond {
		t.Errorf("outbox: %d %s", got, cfg.Outboxes[0].Wait())
	}
	if got := cfg.Consumers[0].Inbox.Size(0); got != 8 || cfg.Consumers[0].Inbox.Wait() != 10*time.Second {
		t.Errorf("inbox: %d %s", got, cfg.Consumers[0].Inbox.Wait())
	}
}

// Zero, negative or absurd sizes and non-positive waits fail at start with the exact key named.
func TestPoolInvalid(t *testing.T) {
	store := func(opts string) string {
		return "auth: {mode: none}\nstore: {dsn: \"postgres://u:p@127.0.0.1/redrive\", " + opts + "}\n"
	}
	outbox := func(opts string) string {
		return minimal + "outboxes: [{name: a, dsn: \"postgres://x@h/d\"}, {name: b, dsn: \"postgres://x@h/d\", " + opts + "}]\n"
	}
	inbox := func(opts string) string {
		return minimal + "consumers: [{name: c, inbox: {dsn: \"postgres://x@h/d\", " + opts + "}}]\n"
	}
	cases := []struct{ name, yaml, want string }{
		{"StoreZero", store("max_conns: 0"), "store.max_conns: must be 1..1000, got 0"},
		{"StoreNegative", store("max_conns: -3"), "store.max_conns: must be 1..1000, got -3"},
		{"StoreHuge", store("max_conns: 100000"), "store.max_conns: must be 1..1000"},
		{"StoreNotANumber", store("max_conns: many"), "line 2: cannot unmarshal !!str `many` into int"},
		{"StoreWaitZero", store("acquire_timeout: 0s"), "store.acquire_timeout: must be positive"},
		{"StoreWaitNegative", store("acquire_timeout: -1s"), "store.acquire_timeout: must be positive"},
		{"StoreWaitNotADuration", store("acquire_timeout: 5"), "duration"},
		{"OutboxZero", outbox("max_conns: 0"), "outboxes[1].max_conns: must be 1..1000, got 0"},
		{"OutboxNegative", outbox("max_conns: -1"), "outboxes[1].max_conns: must be 1..1000, got -1"},
		{"OutboxWaitZero", outbox("acquire_timeout: 0s"), "outboxes[1].acquire_timeout: must be positive"},
		{"InboxZero", inbox("max_conns: 0"), "consumers[0].inbox.max_conns: must be 1..1000, got 0"},
		{"InboxNegative", inbox("max_conns: -2"), "consumers[0].inbox.max_conns: must be 1..1000, got -2"},
		{"InboxWaitNegative", inbox("acquire_timeout: -5s"), "consumers[0].inbox.acquire_timeout: must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), env(nil))
			if err == nil {
				t.Fatal("accepted an invalid config")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// The example documents every pool key with its default.
func TestPoolExampleDocumented(t *testing.T) {
	cfg, err := Load("console.example.yaml", env(map[string]string{
		"REDRIVE_STORE_PASSWORD": "s", "ORDERS_DB_PASSWORD": "o", "INVENTORY_DB_PASSWORD": "i"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.Size(0) != DefaultStoreMaxConns || cfg.Outboxes[0].Size(0) != DefaultOutboxMaxConns ||
		cfg.Consumers[0].Inbox.Size(0) != DefaultInboxMaxConns {
		t.Errorf("example's max_conns differ from the defaults")
	}
	if cfg.Store.Wait() != DefaultAcquireTimeout || cfg.Outboxes[0].Wait() != DefaultAcquireTimeout ||
		cfg.Consumers[0].Inbox.Wait() != DefaultAcquireTimeout {
		t.Errorf("example's acquire_timeout differ from the default")
	}
}
