package configs

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const minimal = `
auth: {mode: none}
store: {dsn: "postgres://u:p@127.0.0.1/redrive"}
`

func TestExampleIsValid(t *testing.T) {
	cfg, err := Load("console.example.yaml", env(map[string]string{
		"REDRIVE_STORE_PASSWORD": "s", "ORDERS_DB_PASSWORD": "o", "INVENTORY_DB_PASSWORD": "i", "PAYMENTS_DB_PASSWORD": "p"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Outboxes[0].Columns.LockedUntil != "locked_until" || cfg.Kafka[0].Lag.Window.D() != 5*time.Minute {
		t.Errorf("example parsed wrong: %+v", cfg.Outboxes[0])
	}
	if db, err := DatabaseOf(string(cfg.Outboxes[1].DSN)); db != MySQL || err != nil || cfg.Outboxes[1].Columns.LockedUntil != "locked_until" {
		t.Errorf("the example's MySQL outbox: %s, %v, %+v", db, err, cfg.Outboxes[1])
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := Parse([]byte(minimal+`
outboxes: [{name: orders, dsn: "postgres://x@127.0.0.1/orders"}]
kafka: [{name: main, brokers: ["127.0.0.1:19092"]}]
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Outboxes[0]
	if cfg.Listen != "127.0.0.1:8080" || o.Table != "outbox_event" || o.MaxAttempts != 10 || o.Columns.Status != "status" ||
		cfg.Sampler.Interval.D() != 15*time.Second || cfg.Sampler.Retention.D() != 168*time.Hour ||
		len(cfg.Kafka[0].DeadLetterTopics) != 5 || cfg.Replay.MaxReplaysPerMessage != 3 ||
		cfg.Kafka[0].HangingTransactionAfter.D() != 5*time.Minute {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestEnvExpansion(t *testing.T) {
	cfg, err := Parse([]byte(`
auth: {mode: none}
listen: "${ADDR:-127.0.0.1:9000}"
store: {dsn: "postgres://u:${PW}@127.0.0.1/redrive"}
`), env(map[string]string{"PW": "hunter2"}))
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.Store.DSN) != "postgres://u:hunter2@127.0.0.1/redrive" || cfg.Listen != "127.0.0.1:9000" {
		t.Errorf("expanded: %q %q", cfg.Store.DSN, cfg.Listen)
	}
	_, err = Parse([]byte(`store: {dsn: "${MISSING}"}`), env(nil))
	if err == nil || !strings.Contains(err.Error(), "MISSING") {
		t.Errorf("missing variable: %v", err)
	}
}

// Every invalid file names the key and says what is wrong.
func TestInvalid(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"NoStore", `auth: {mode: none}`, "store.dsn: required"},
		{"NoAuth", `store: {dsn: "postgres://x@127.0.0.1/r"}`, "auth.mode: required"},
		{"UnknownAuth", `store: {dsn: "postgres://x@127.0.0.1/r"}
auth: {mode: magic}`, `auth.mode: unknown mode "magic" (supported: none, basic, proxy)`},
		{"KeyTwice", minimal + `auth: {mode: basic}`, `"auth" already defined`},
		{"NoneOnPublicAddress", minimal + `listen: 0.0.0.0:8080`, "auth.mode: none is only allowed when listen is a loopback"},
		{"BadListen", minimal + `listen: nope`, "listen:"},
		{"UnknownKey", minimal + `outboxs: []`, "outboxs"},
		{"BadDuration", minimal + `request_timeout: soon`, "duration"},
		{"OutboxNoName", minimal + `outboxes: [{dsn: "postgres://x@h/d"}]`, "outboxes[0].name: required"},
		{"OutboxDupName", minimal + `outboxes: [{name: a, dsn: "postgres://x@h/d"}, {name: a, dsn: "postgres://x@h/d"}]`, "outboxes[1].name: \"a\" is used twice"},
		{"OutboxBadTable", minimal + `outboxes: [{name: a, dsn: "postgres://x@h/d", table: "x; drop table y"}]`, "outboxes[0].table"},
		{"OutboxBadColumn", minimal + `outboxes: [{name: a, dsn: "postgres://x@h/d", columns: {status: "st atus"}}]`, "outboxes[0].columns.status"},
		{"OutboxBadDSN", minimal + `outboxes: [{name: a, dsn: "mongodb://x/y"}]`, "outboxes[0].dsn: must be a postgres:// or mysql:// URL"},
		{"OutboxBadTimeZone", minimal + `outboxes: [{name: a, dsn: "postgres://x@h/d", time_zone: "Mars/Olympus"}]`,
			`outboxes[0].time_zone: "Mars/Olympus" is not a time zone`},
		{"OutboxLocalTimeZone", minimal + `outboxes: [{name: a, dsn: "postgres://x@h/d", time_zone: Local}]`, "outboxes[0].time_zone"},
		{"OutboxMySQLWithoutDatabase", minimal + `outboxes: [{name: a, dsn: "mysql://x"}]`,
			"outboxes[0].dsn: a mysql:// URL names its database: mysql://user:password@host:port/database"},
		{"OutboxMySQLWithoutHost", minimal + `outboxes: [{name: a, dsn: "mysql:///orders"}]`, "outboxes[0].dsn: a mysql:// URL names its host"},
		{"OutboxMySQLBadPort", minimal + `outboxes: [{name: a, dsn: "mysql://u:p@h:99999/orders"}]`, "outboxes[0].dsn: a mysql:// URL's port must be 1-65535"},
		{"InboxBadDSN", minimal + `consumers: [{name: c, inbox: {dsn: "mysql://u:secret@h:3306"}}]`, "consumers[0].inbox.dsn: a mysql:// URL names its database"},
		{"KafkaNoBrokers", minimal + `kafka: [{name: k}]`, "kafka[0].brokers: required"},
		{"KafkaBadBroker", minimal + `kafka: [{name: k, brokers: [nohost]}]`, "kafka[0].brokers[0]"},
		{"KafkaBadSASL", minimal + `kafka: [{name: k, brokers: ["h:1"], sasl: {mechanism: MD5}}]`, "kafka[0].sasl.mechanism"},
		{"KafkaNegativeHangingTransactionAfter", minimal + `kafka: [{name: k, brokers: ["h:1"], hanging_transaction_after: -1m}]`, "kafka[0].hanging_transaction_after: must be positive"},
		{"KafkaBadHangingTransactionAfter", minimal + `kafka: [{name: k, brokers: ["h:1"], hanging_transaction_after: soon}]`, "duration"},
		{"RabbitBadURL", minimal + `rabbitmq: [{name: r, url: "http://x", management_url: "http://x:15672"}]`, "rabbitmq[0].url"},
		{"ConsumerUnknownCluster", minimal + `consumers: [{name: c, kafka: {cluster: nope}}]`, "consumers[0].kafka.cluster"},
		{"NameInURL", minimal + `outboxes: [{name: "a/b", dsn: "postgres://x@h/d"}]`, "outboxes[0].name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { refused(t, tc.yaml, tc.want) })
	}
}

// refused checks that Parse refuses yaml with an error that says want.
func refused(t *testing.T, yaml, want string) {
	t.Helper()
	_, err := Parse([]byte(yaml), env(nil))
	if err == nil {
		t.Fatal("accepted an invalid config")
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

func TestSecretsAreRedacted(t *testing.T) {
	cfg, err := Parse([]byte(minimal+`
kafka: [{name: k, brokers: ["h:1"], sasl: {mechanism: PLAIN, username: u, password: "topsecret"}}]
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(cfg)
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg.Kafka[0].SASL), string(j)} {
		if strings.Contains(s, "topsecret") || strings.Contains(s, "u:p@") {
			t.Errorf("secret leaked: %s", s)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load("testdata/nope.yaml", os.Getenv); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestExpandedValuesStayStrings(t *testing.T) {
	cfg, err := Parse([]byte(`
auth: {mode: none}
store: {dsn: "${DSN}"}
kafka: [{name: k, brokers: ["h:1"], sasl: {mechanism: PLAIN, username: "${U}", password: "${P}"}}]
`), env(map[string]string{"DSN": "postgres://a@h/d", "U": "yes", "P": "*notanalias: {x}"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Kafka[0].SASL.Username != "yes" || string(cfg.Kafka[0].SASL.Password) != "*notanalias: {x}" {
		t.Errorf("got %q %q", cfg.Kafka[0].SASL.Username, string(cfg.Kafka[0].SASL.Password))
	}
}

// The deployment walk-through in the README must stay a valid configuration.
func TestREADMEDeploymentExampleIsValid(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "A real deployment")
	if i < 0 {
		t.Fatal("README lost its deployment walk-through")
	}
	start := strings.Index(text[i:], "```yaml\n") + i + len("```yaml\n")
	end := strings.Index(text[start:], "```") + start
	env := func(name string) string {
		if strings.HasSuffix(name, "_SHA256") {
			return strings.Repeat("ab", 32)
		}
		return "secret"
	}
	if _, err := Parse([]byte(text[start:end]), env); err != nil {
		t.Fatalf("README's deployment config: %v", err)
	}
}

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
		t.Run(tc.name, func(t *testing.T) { refused(t, tc.yaml, tc.want) })
	}
}

// The example documents every pool key with its default.
func TestPoolExampleDocumented(t *testing.T) {
	cfg, err := Load("console.example.yaml", env(map[string]string{
		"REDRIVE_STORE_PASSWORD": "s", "ORDERS_DB_PASSWORD": "o", "INVENTORY_DB_PASSWORD": "i", "PAYMENTS_DB_PASSWORD": "p"}))
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

// An outbox's and an inbox's DSN pick their database by scheme; a mysql:// URL is accepted with
// its password out of every error.
func TestDatabaseOf(t *testing.T) {
	for dsn, want := range map[string]Database{
		"postgres://u:p@h/d":                             PostgreSQL,
		"postgresql://u@h:5432/d?sslmode=disable":        PostgreSQL,
		"mysql://u:p@h:3306/orders?tls=true":             MySQL,
		"mysql://u:p%40ss@[::1]/orders":                  MySQL,
		"mysql://redrive:secret@db.internal/orders_prod": MySQL,
	} {
		if got, err := DatabaseOf(dsn); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", dsn, got, err, want)
		}
	}
	cfg, err := Parse([]byte(minimal+`
outboxes: [{name: orders, dsn: "mysql://u:hunter2@127.0.0.1:3306/orders"}]
consumers: [{name: inventory, inbox: {dsn: "mysql://u:hunter2@127.0.0.1:3306/inventory"}}]`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Outboxes[0].Table != "outbox_event" || cfg.Consumers[0].Inbox.Table != "inbox_message" {
		t.Errorf("defaults: %+v %+v", cfg.Outboxes[0], cfg.Consumers[0].Inbox)
	}
	if _, err := Parse([]byte(minimal+`
outboxes: [{name: orders, dsn: "mysql://u:hunter2@127.0.0.1/"}]`), func(string) string { return "" }); err == nil ||
		strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a mysql:// URL without a database: %v", err)
	}
}
