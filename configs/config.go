// Package configs loads and validates the console's YAML configuration.
//
// The file may reference environment variables as ${NAME} (or ${NAME:-default}) so secrets stay
// out of it. Load fails with an error that names the offending key, e.g.
// "outboxes[1].table: must be an identifier like outbox_event or schema.outbox_event".
package configs

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // outboxes[].time_zone names a zone wherever the console runs, zone files or not

	"gopkg.in/yaml.v3"

	"github.com/redrive/redrive/ops/access"
)

// Config is the whole console configuration. Zero values are replaced by defaults in Load.
type Config struct {
	Listen         string    `yaml:"listen"`          // address to serve on; default 127.0.0.1:8080
	ReadOnly       bool      `yaml:"read_only"`       // every mutating route answers 403
	RequestTimeout Duration  `yaml:"request_timeout"` // per request; default 15s
	Log            Log       `yaml:"log"`
	Store          Store     `yaml:"store"`
	Auth           Auth      `yaml:"auth"`      // see auth.go
	Redaction      Redaction `yaml:"redaction"` // see auth.go
	Sampler        Sampler   `yaml:"sampler"`

	Outboxes  []Outbox         `yaml:"outboxes"`
	Kafka     []KafkaCluster   `yaml:"kafka"`
	RabbitMQ  []RabbitMQBroker `yaml:"rabbitmq"`
	Consumers []Consumer       `yaml:"consumers"`
	MessageID MessageIDRules   `yaml:"message_id"`
	Replay    Replay           `yaml:"replay"`
	Search    Search           `yaml:"search"`
	Export    Export           `yaml:"export"`
	Notify    Notify           `yaml:"notify"` // see notify.go
	Audit     Audit            `yaml:"audit"`
}

// Search bounds content searches (filter expressions over records and messages).
type Search struct {
	// MaxScan caps the records one search request reads (its max_scan parameter may ask for
	// fewer). Default 100000.
	MaxScan int64 `yaml:"max_scan"`
	// Timeout is how long one search request reads before it answers with what it found and a
	// cursor to go on. Default 10s; it must be below request_timeout.
	Timeout Duration `yaml:"timeout"`
	// MaxRunning is how many filter scans (records and messages searched with filter=) run at
	// once, in all; MaxRunningPerPerson how many of one person's (a token's owner). Past them a
	// scan is refused with 429. Defaults 16 and 4.
	MaxRunning          int `yaml:"max_running"`
	MaxRunningPerPerson int `yaml:"max_running_per_person"`
}

// Export governs downloads of message content (the export endpoints).
type Export struct {
	// MinRole is the least role that may export: viewer, operator (default) or admin.
	MinRole string `yaml:"min_role"`
	// MaxRunning is how many exports stream at once, in all; MaxRunningPerPerson how many of one
	// person's. Past them an export is refused with 429. Defaults 8 and 2.
	MaxRunning          int `yaml:"max_running"`
	MaxRunningPerPerson int `yaml:"max_running_per_person"`
	// WriteTimeout cuts an export whose reader takes none of it for this long (a stalled reader
	// would hold its broker reads and buffers for as long as it stays connected). Default 30s.
	WriteTimeout Duration `yaml:"write_timeout"`
}

// Log selects the logger. Format is "text" (default) or "json"; Level is debug|info|warn|error.
type Log struct {
	Format string `yaml:"format"`
	Level  string `yaml:"level"`
}

// Store is the console's own PostgreSQL schema (audit, replay ledger, history). Required.
type Store struct {
	DSN  Secret           `yaml:"dsn"`
	Pool `yaml:",inline"` // max_conns (default DefaultStoreMaxConns), acquire_timeout
}

// Pool bounds one PostgreSQL connection pool: how many connections the console opens to that
// database, and how long a call waits for one of them when all are in use before it answers 503
// with what was busy. A nil field is unset; Load sets it to its default (Size and Wait give the
// default for a Config built in code).
type Pool struct {
	MaxConns       *int      `yaml:"max_conns"`
	AcquireTimeout *Duration `yaml:"acquire_timeout"`
}

// Pool defaults. They follow the console's own concurrency; none of its code paths waits for a
// second connection of a pool while holding one, so a pool this size is never exhausted by the
// console alone, only by load, and then a call waits at most DefaultAcquireTimeout.
const (
	// DefaultStoreMaxConns: the store serves every web request that reads or writes the ledger,
	// audit, sessions or history (the overview's panels read in parallel), the sampler's writes and
	// retention, the replay worker's 4-stage pipeline (claim, inbox re-check, publish, settle can
	// each hold one at a time) and replay plans (one transaction each). 4 for the worker, 2 for the
	// sampler and about 10 for requests and plans in flight: 16. PostgreSQL's default
	// max_connections is 100, which leaves room for several replicas.
	DefaultStoreMaxConns = 16
	// DefaultOutboxMaxConns: an outbox lives in a service's production database, where the console
	// is a guest; its overview counts run side by side on up to 4 connections (their results are
	// shared by every open tab), and browse, plan and replay reads are one query each.
	DefaultOutboxMaxConns = 4
	// DefaultInboxMaxConns: an inbox is also a service's database; a look-up is one batched
	// query per 1,000 ids, made by a plan or the replay worker's inbox stage, one at a time each.
	DefaultInboxMaxConns = 4
	// DefaultAcquireTimeout: long enough to ride out a burst (queries take milliseconds), well
	// under the default request_timeout (15s), so a full pool answers with what was busy instead
	// of a timeout.
	DefaultAcquireTimeout = 5 * time.Second
)

// Size is max_conns, or def when it is unset.
func (p Pool) Size(def int) int {
	if p.MaxConns == nil {
		return def
	}
	return *p.MaxConns
}

// Wait is acquire_timeout, or DefaultAcquireTimeout when it is unset.
func (p Pool) Wait() time.Duration {
	if p.AcquireTimeout == nil {
		return DefaultAcquireTimeout
	}
	return p.AcquireTimeout.D()
}

func (p *Pool) applyDefaults(size int) {
	if p.MaxConns == nil {
		p.MaxConns = &size
	}
	if p.AcquireTimeout == nil {
		d := Duration(DefaultAcquireTimeout)
		p.AcquireTimeout = &d
	}
}

// maxPoolConns is a sanity bound: more connections than this to one database is a typo.
const maxPoolConns = 1000

func (p Pool) validate(prefix string, bad func(key, format string, args ...any)) {
	if p.MaxConns != nil && (*p.MaxConns < 1 || *p.MaxConns > maxPoolConns) {
		bad(prefix+"max_conns", "must be 1..%d, got %d", maxPoolConns, *p.MaxConns)
	}
	if p.AcquireTimeout != nil && *p.AcquireTimeout <= 0 {
		bad(prefix+"acquire_timeout", "must be positive, e.g. 5s")
	}
}

// Sampler is the background collector of lag and queue history.
type Sampler struct {
	Interval  Duration `yaml:"interval"`  // default 15s
	Retention Duration `yaml:"retention"` // default 168h (7 days)
	// MinRefresh is how old a viewed Kafka cluster's snapshot may be before a page or API read
	// re-samples it on demand (once for all concurrent viewers); default 2s, at most interval.
	MinRefresh Duration `yaml:"min_refresh"`
	// MaxServeAge bounds how old a snapshot is served at once while its re-sample runs behind the
	// answer (stale while revalidate); a read of a snapshot this old waits for the re-sample.
	// Default two intervals; at least min_refresh (equal to it: every re-sample is waited for).
	MaxServeAge Duration `yaml:"max_serve_age"`
}

// Outbox is one service's transactional outbox table.
type Outbox struct {
	Name    string        `yaml:"name"`    // required, unique; used in URLs
	DSN     Secret        `yaml:"dsn"`     // required
	Table   string        `yaml:"table"`   // default: the format's (outbox_event for the seed); may be schema-qualified
	Columns OutboxColumns `yaml:"columns"` // default: the format's column names
	// Format is the table's layout, whose states the console shows: seed (default, the seed's
	// outbox_event), spring-modulith (the event publication registry), namastack (outbox_record)
	// or debezium (the insert-only outbox table Debezium's outbox router reads). OutboxFormats.
	Format string `yaml:"format"`
	// CompletionMode is spring.modulith.events.completion-mode of a spring-modulith registry:
	// update (default: completed rows stay, with a completion_date), delete (they are deleted) or
	// archive (they move to ArchiveTable).
	CompletionMode string `yaml:"completion_mode"`
	// ArchiveTable is where a spring-modulith registry in archive mode keeps its completed
	// publications; default event_publication_archive (EVENT_PUBLICATION_ARCHIVE on MySQL).
	ArchiveTable string `yaml:"archive_table"`
	MaxAttempts  int    `yaml:"max_attempts"` // the relay's limit, shown for context; default 10
	// StaleReadyAfter marks a READY backlog as a problem when its oldest due row is older; default 5m.
	StaleReadyAfter Duration `yaml:"stale_ready_after"`
	// TimeZone is the zone the services write the table's timestamps without a zone in (the
	// seed's TIMESTAMP, MySQL's DATETIME: CURRENT_TIMESTAMP in the writer session's zone), as an
	// IANA name (Europe/Berlin) or UTC; default UTC. The console's sessions use it, so that
	// leases, due times and ages compare with the clock the relays wrote them by.
	TimeZone string           `yaml:"time_zone"`
	Pool     `yaml:",inline"` // max_conns (default DefaultOutboxMaxConns), acquire_timeout
	// RelayTo is where the service's relay publishes the outbox's events: a replay of the outbox
	// sets rows back to READY for that relay, so the consumer reading there (consumers[]) guards
	// it with its inbox. Unset, the replay's plan says its events are unguarded.
	RelayTo *OutboxRelayTo `yaml:"relay_to"`
}

// OutboxRelayTo names the relay's destination: a Kafka topic (cluster and topic) or a RabbitMQ
// queue (broker, queue and vhost, default /).
type OutboxRelayTo struct {
	Cluster string `yaml:"cluster"`
	Topic   string `yaml:"topic"`
	Broker  string `yaml:"broker"`
	Vhost   string `yaml:"vhost"`
	Queue   string `yaml:"queue"`
}

// OutboxColumns maps the outbox's logical columns to the table's real names. Empty = default.
type OutboxColumns struct {
	ID            string `yaml:"id"`
	EventID       string `yaml:"event_id"`
	AggregateType string `yaml:"aggregate_type"`
	AggregateID   string `yaml:"aggregate_id"`
	EventType     string `yaml:"event_type"`
	SchemaVersion string `yaml:"schema_version"`
	Payload       string `yaml:"payload"`
	Status        string `yaml:"status"`
	Attempts      string `yaml:"attempts"`
	AvailableAt   string `yaml:"available_at"`
	LockedUntil   string `yaml:"locked_until"`
	LastError     string `yaml:"last_error"`
	CreatedAt     string `yaml:"created_at"`
	SentAt        string `yaml:"sent_at"`
	// Other holds the columns of formats other than the seed, keyed by the format's own logical
	// names (OutboxFormatColumns); with defaults applied, a non-seed format's whole mapping.
	Other map[string]string `yaml:",inline"`
}

// The outbox formats (outboxes[].format).
const (
	OutboxFormatSeed           = "seed"
	OutboxFormatSpringModulith = "spring-modulith"
	OutboxFormatNamastack      = "namastack"
	OutboxFormatDebezium       = "debezium"
)

// OutboxFormats lists the formats outboxes[].format accepts, the default first.
var OutboxFormats = []string{OutboxFormatSeed, OutboxFormatSpringModulith, OutboxFormatNamastack, OutboxFormatDebezium}

// OutboxFormatColumns are the logical columns of each format other than the seed (whose are
// OutboxColumns' fields), the keys outboxes[].columns accepts for it. Each defaults to its own
// name (upper-case for spring-modulith on MySQL, as Spring Modulith's MySQL schema has them),
// except debezium's created_at: Debezium's outbox table has no insert time unless the service
// adds one (table.field.event.timestamp), so it is unmapped unless configured.
var OutboxFormatColumns = map[string][]string{
	OutboxFormatSpringModulith: {"id", "listener_id", "event_type", "serialized_event", "publication_date",
		"completion_date", "status", "completion_attempts", "last_resubmission_date"},
	OutboxFormatNamastack: {"id", "status", "record_key", "record_type", "payload", "created_at", "completed_at",
		"failure_count", "failure_reason", "next_retry_at", "handler_id"},
	OutboxFormatDebezium: {"id", "aggregatetype", "aggregateid", "type", "payload", "created_at"},
}

// outboxFormatTables are the formats' default tables: PostgreSQL's, then MySQL's.
var outboxFormatTables = map[string][2]string{
	OutboxFormatSeed:           {"outbox_event", "outbox_event"},
	OutboxFormatSpringModulith: {"event_publication", "EVENT_PUBLICATION"},
	OutboxFormatNamastack:      {"outbox_record", "outbox_record"},
	OutboxFormatDebezium:       {"outbox", "outbox"},
}

// applyFormatDefaults fills the format's default table and columns: the seed's struct fields, or
// for another format its whole mapping in Columns.Other (what was set under columns: kept, unknown
// keys included, for Validate to name).
// Location is TimeZone's location (UTC when it names none: the configuration was validated).
func (o Outbox) Location() *time.Location {
	loc, err := time.LoadLocation(o.TimeZone)
	if err != nil || o.TimeZone == "" {
		return time.UTC
	}
	return loc
}

func (o *Outbox) applyFormatDefaults() {
	o.Format = cmp.Or(o.Format, OutboxFormatSeed)
	db, _ := DatabaseOf(string(o.DSN))
	mysql := db == MySQL
	tables, ok := outboxFormatTables[o.Format]
	if !ok {
		return
	}
	if mysql {
		o.Table = cmp.Or(o.Table, tables[1])
	} else {
		o.Table = cmp.Or(o.Table, tables[0])
	}
	if o.Format == OutboxFormatSeed {
		o.Columns = o.Columns.withDefaults()
		return
	}
	set := map[string]string{}
	for k, v := range o.Columns.fields() {
		if v != "" {
			set[k] = v
		}
	}
	for k, v := range o.Columns.Other {
		set[k] = v
	}
	for _, k := range OutboxFormatColumns[o.Format] {
		def := k
		switch {
		case o.Format == OutboxFormatDebezium && k == "created_at":
			def = ""
		case o.Format == OutboxFormatSpringModulith && mysql:
			def = strings.ToUpper(k)
		}
		if _, ok := set[k]; !ok && def != "" {
			set[k] = def
		}
	}
	o.Columns = OutboxColumns{Other: set}
	if o.Format == OutboxFormatSpringModulith {
		o.CompletionMode = cmp.Or(o.CompletionMode, "update")
		if mysql {
			o.ArchiveTable = cmp.Or(o.ArchiveTable, "EVENT_PUBLICATION_ARCHIVE")
		} else {
			o.ArchiveTable = cmp.Or(o.ArchiveTable, "event_publication_archive")
		}
	}
}

// KafkaCluster is one Kafka cluster to watch.
type KafkaCluster struct {
	Name             string   `yaml:"name"`               // required, unique
	Brokers          []string `yaml:"brokers"`            // required, host:port
	ClientID         string   `yaml:"client_id"`          // default redrive
	DeadLetterTopics []string `yaml:"dead_letter_topics"` // glob patterns; default *.DLT *-dlt *.dlq *-dlq *.retry*
	RequestTimeout   Duration `yaml:"request_timeout"`    // default 10s
	TLS              *TLS     `yaml:"tls"`
	SASL             *SASL    `yaml:"sasl"`
	Lag              LagRules `yaml:"lag"`
	// HangingTransactionAfter is how long a transaction may stay open on a partition before it
	// is a problem (kind kafka_transaction): it holds the partition's last stable offset, and
	// every read_committed consumer of the partition waits there. Default 5m.
	HangingTransactionAfter Duration `yaml:"hanging_transaction_after"`
	// Headers overrides the dead-letter header names; keys are logical fields (original_topic, …).
	Headers map[string][]string `yaml:"headers"`
	// SchemaRegistry decodes Confluent-framed keys and values by the schema id they carry; nil
	// shows them raw.
	SchemaRegistry *SchemaRegistry `yaml:"schema_registry"`
	// Schemas decodes plain (unframed) Avro or Protobuf keys and values of the topics they name.
	Schemas []TopicSchemas `yaml:"schemas"`
}

// SchemaRegistry is a Confluent-compatible Schema Registry.
type SchemaRegistry struct {
	URL      string `yaml:"url"`      // required, http(s)://host:port
	Username string `yaml:"username"` // basic auth; empty sends none
	Password Secret `yaml:"password"`
	TLS      *TLS   `yaml:"tls"` // same block as the cluster's
}

// TopicSchemas names the schema files that decode the unframed keys and values of some topics.
type TopicSchemas struct {
	Topics []string    `yaml:"topics"` // required, glob patterns (orders*, *.DLT)
	Key    *SchemaFile `yaml:"key"`    // nil leaves keys raw
	Value  *SchemaFile `yaml:"value"`  // nil leaves values raw
}

// SchemaFile is one Avro schema file or a set of .proto files and the message to read.
type SchemaFile struct {
	AvroFile    string   `yaml:"avro_file"`    // an .avsc; or give proto_files and message
	ProtoFiles  []string `yaml:"proto_files"`  // .proto sources, compiled together
	ImportPaths []string `yaml:"import_paths"` // where imports are found; default the files' folders
	Message     string   `yaml:"message"`      // fully qualified, e.g. acme.Order; required with proto_files
}

// LagRules are the Burrow-style status thresholds.
type LagRules struct {
	Window     Duration `yaml:"window"`       // evaluation window; default 5m
	StopAfter  Duration `yaml:"stop_after"`   // no commit for longer than this with lag > 0 → STOP; default 15m
	WarnMinLag int64    `yaml:"warn_min_lag"` // growth below this is noise; default 1
	// WarnAfterSeconds makes a group with members WARN when its next record to consume is older
	// than this many seconds (time lag); 0 (the default) judges no time lag.
	WarnAfterSeconds float64 `yaml:"warn_after_seconds"`
	// ErrorAfterSeconds makes it ERR past this time lag; 0 (the default) is off. Above
	// WarnAfterSeconds when both are set.
	ErrorAfterSeconds float64 `yaml:"error_after_seconds"`
}

// TLS configures a client certificate and trust. Empty paths mean the system defaults.
type TLS struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// SASL configures Kafka authentication. Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
type SASL struct {
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	Password  Secret `yaml:"password"`
}

// RabbitMQBroker is one RabbitMQ broker (AMQP for messages, management API for everything else).
type RabbitMQBroker struct {
	Name               string   `yaml:"name"`                // required, unique
	URL                Secret   `yaml:"url"`                 // required, amqp:// or amqps://
	ManagementURL      string   `yaml:"management_url"`      // required, http(s)://host:port
	ManagementUser     string   `yaml:"management_user"`     // default: the AMQP URL's user
	ManagementPassword Secret   `yaml:"management_password"` // default: the AMQP URL's password
	Vhosts             []string `yaml:"vhosts"`              // default: all
	DeadLetterQueues   []string `yaml:"dead_letter_queues"`  // glob patterns; default *.dlq *.DLQ dead-letter*
	TLS                *TLS     `yaml:"tls"`
}

// Consumer is a service whose idempotency (inbox) records guard replays.
type Consumer struct {
	Name     string          `yaml:"name"` // required, unique; the inbox's consumer column value
	Inbox    *Inbox          `yaml:"inbox"`
	Kafka    *ConsumerKafka  `yaml:"kafka"`
	RabbitMQ *ConsumerRabbit `yaml:"rabbitmq"`
}

// Inbox is a consumer's idempotency table: the seed's inbox_message, or Eventuate Tram's
// received_messages (Format).
type Inbox struct {
	DSN Secret `yaml:"dsn"` // required
	// Format is the table's shape: InboxSeed (default) or InboxEventuate.
	Format  InboxFormat      `yaml:"format"`
	Table   string           `yaml:"table"` // default inbox_message (seed), received_messages (eventuate)
	Columns InboxColumns     `yaml:"columns"`
	Pool    `yaml:",inline"` // max_conns (default DefaultInboxMaxConns), acquire_timeout
}

// InboxFormat is the shape of a consumer's inbox table.
type InboxFormat string

// The inbox formats.
const (
	// InboxSeed is the seed's inbox_message(message_id, consumer, received_at, processed_at): a
	// row with processed_at set is processed, one without is in progress (maybe mid-transaction).
	InboxSeed InboxFormat = "seed"
	// InboxEventuate is Eventuate Tram's received_messages(consumer_id, message_id,
	// creation_time): its duplicate detector writes the row in the handler's own transaction, so
	// a row means processed; there is no in-progress state. creation_time is epoch milliseconds.
	InboxEventuate InboxFormat = "eventuate"
)

// InboxColumns maps the inbox's logical columns to real names. Empty = the format's names: the
// seed's message_id, consumer, received_at, processed_at; Eventuate's message_id, consumer_id,
// creation_time. A key of the other format is refused.
type InboxColumns struct {
	MessageID   string `yaml:"message_id"`
	Consumer    string `yaml:"consumer"`     // seed
	ReceivedAt  string `yaml:"received_at"`  // seed
	ProcessedAt string `yaml:"processed_at"` // seed
	// ConsumerID and CreationTime are Eventuate's (its consumer column and the epoch
	// milliseconds its row was written at).
	ConsumerID   string `yaml:"consumer_id"`
	CreationTime string `yaml:"creation_time"`
}

// ConsumerKafka ties a consumer to a Kafka group.
type ConsumerKafka struct {
	Cluster string   `yaml:"cluster"`
	Group   string   `yaml:"group"`
	Topics  []string `yaml:"topics"`
}

// ConsumerRabbit ties a consumer to a RabbitMQ queue.
type ConsumerRabbit struct {
	Broker string `yaml:"broker"`
	Vhost  string `yaml:"vhost"`
	Queue  string `yaml:"queue"`
}

// MessageIDRules find a message's idempotency key: the first header present, else the first JSON
// path that resolves in the value ($.messageId, $.meta.id, $.items[0].id: see ops/jsonpath; the old
// bare form, meta.id, is still read and warned about at start).
type MessageIDRules struct {
	Headers   []string `yaml:"headers"`
	JSONPaths []string `yaml:"json_paths"`
}

// Replay limits guarded replays.
type Replay struct {
	MaxReplaysPerMessage int `yaml:"max_replays_per_message"` // default 3
	DefaultRatePerSecond int `yaml:"default_rate_per_second"` // default 200
	// Lease is how long a replica holds a running job without renewing; a job whose replica died
	// is resumed by another one (or the restarted one) after it. Default 30s.
	Lease Duration `yaml:"lease"`
	// OperatorMaxMessages is the largest job (messages to publish) an operator may start; larger
	// ones need an admin. Default 10000.
	OperatorMaxMessages int `yaml:"operator_max_messages"`
	// FourEyes, when enabled, holds a job above Threshold messages, or any forced one, as
	// awaiting_approval until a second, different operator or admin approves it.
	FourEyes FourEyes `yaml:"four_eyes"`
	// StripHeaders are the prefixes (any case) of the dead-letter headers a replay drops: the
	// failed attempt's exception story. Unset, the replay engine's default (replay.DefaultStripHeaders,
	// Spring's exception headers); [] keeps them all. Redrive's
	// own x-redrive-* headers are always written anew, and RabbitMQ's x-death always dropped.
	StripHeaders []string `yaml:"strip_headers"`
	// AllowedDestinations are where a plan may redirect messages instead of their original
	// destination; empty (the default) allows no redirect.
	AllowedDestinations []AllowedDestination `yaml:"allowed_destinations"`
	// PlanWait is how long a plan request waits for its plan before it answers with the plan
	// still planning (202; it goes on in the background). Default 5s; a selection of more than
	// 50,000 messages is answered at once.
	PlanWait Duration `yaml:"plan_wait"`
}

// AllowedDestination is one destination a replay may be redirected to: each field is a glob
// (path.Match: *, ?, [...]) the destination's must match; an omitted field matches any value.
type AllowedDestination struct {
	Kind       string `yaml:"kind"` // kafka or rabbitmq
	Cluster    string `yaml:"cluster"`
	Topic      string `yaml:"topic"`
	Broker     string `yaml:"broker"`
	Vhost      string `yaml:"vhost"`
	Exchange   string `yaml:"exchange"`
	RoutingKey string `yaml:"routing_key"`
}

// FourEyes is the two-person rule for every action that moves messages or offsets: replays,
// discards, outbox requeues (planned or direct) and offset moves. It counts people and volume:
// what one person moved from one source within Window, this action included; past Threshold the
// action waits for a second, different person (an API token is its owner: auth.tokens[].owner).
// A forced replay and an edited message always wait.
type FourEyes struct {
	Enabled   bool     `yaml:"enabled"`   // default false
	Threshold int      `yaml:"threshold"` // messages (or records skipped) one person may move from a source within window; default 1000
	Window    Duration `yaml:"window"`    // default 1h
}

// Load reads, expands, parses, defaults and validates the file at path.
func Load(path string, getenv func(string) string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg, err := Parse(raw, getenv)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse is Load without the file: expand ${ENV}, decode strictly, apply defaults, validate.
func Parse(raw []byte, getenv func(string) string) (*Config, error) {
	expanded, err := expandEnv(raw, getenv)
	if err != nil {
		return nil, err
	}
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(expanded))
	dec.KnownFields(true) // a misspelt key is an error, not a silently ignored option
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, errEOF) {
		return nil, err
	}
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandEnv replaces ${NAME} and ${NAME:-default} inside YAML values only (comments and keys are
// left alone, and a value cannot inject YAML structure). A referenced variable that is unset and
// has no default is an error, so a missing secret fails at start rather than as an auth error.
func expandEnv(raw []byte, getenv func(string) string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 {
		return raw, nil // empty file
	}
	var missing []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
			n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
				sub := envRef.FindStringSubmatch(m)
				if v := getenv(sub[1]); v != "" {
					return v
				}
				if sub[2] != "" {
					return sub[3]
				}
				missing = append(missing, fmt.Sprintf("%s (line %d)", sub[1], n.Line))
				return ""
			})
			// An expanded value is a string, whatever it looks like ("yes", "0123", "*x").
			n.Style, n.Tag = yaml.DoubleQuotedStyle, "!!str"
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	if len(missing) > 0 {
		return nil, fmt.Errorf("environment variable %s is referenced but not set", strings.Join(missing, ", "))
	}
	return yaml.Marshal(&doc)
}

func (c *Config) applyDefaults() {
	c.Notify.applyDefaults()
	c.Audit.applyDefaults()
	c.Search.MaxScan = cmp.Or(c.Search.MaxScan, 100_000)
	c.Export.MinRole = cmp.Or(c.Export.MinRole, access.Operator.String())
	c.Export.MaxRunning = cmp.Or(c.Export.MaxRunning, 8)
	c.Export.MaxRunningPerPerson = cmp.Or(c.Export.MaxRunningPerPerson, 2)
	c.Export.WriteTimeout = cmp.Or(c.Export.WriteTimeout, Duration(30*time.Second))
	c.Search.MaxRunning = cmp.Or(c.Search.MaxRunning, 16)
	c.Search.MaxRunningPerPerson = cmp.Or(c.Search.MaxRunningPerPerson, 4)
	c.Listen = cmp.Or(c.Listen, "127.0.0.1:8080")
	c.RequestTimeout = cmp.Or(c.RequestTimeout, Duration(15*time.Second))
	if c.Search.Timeout == 0 {
		// 10 s, and always room within the request for the answer after the scan stops.
		c.Search.Timeout = Duration(min(10*time.Second, c.RequestTimeout.D()*2/3))
	}
	c.Auth.applyDefaults()
	c.Log.Format = cmp.Or(c.Log.Format, "text")
	c.Log.Level = cmp.Or(c.Log.Level, "info")
	c.Store.applyDefaults(DefaultStoreMaxConns)
	c.Sampler.Interval = cmp.Or(c.Sampler.Interval, Duration(15*time.Second))
	c.Sampler.MinRefresh = cmp.Or(c.Sampler.MinRefresh, min(Duration(2*time.Second), c.Sampler.Interval))
	c.Sampler.MaxServeAge = cmp.Or(c.Sampler.MaxServeAge, 2*c.Sampler.Interval)
	c.Sampler.Retention = cmp.Or(c.Sampler.Retention, Duration(7*24*time.Hour))
	for i := range c.Outboxes {
		o := &c.Outboxes[i]
		o.applyFormatDefaults()
		o.MaxAttempts = cmp.Or(o.MaxAttempts, 10)
		o.StaleReadyAfter = cmp.Or(o.StaleReadyAfter, Duration(5*time.Minute))
		o.TimeZone = cmp.Or(o.TimeZone, "UTC")
		o.Pool.applyDefaults(DefaultOutboxMaxConns)
	}
	for i := range c.Kafka {
		k := &c.Kafka[i]
		k.ClientID = cmp.Or(k.ClientID, "redrive")
		if len(k.DeadLetterTopics) == 0 {
			k.DeadLetterTopics = []string{"*.DLT", "*-dlt", "*.dlq", "*-dlq", "*.retry*"}
		}
		k.RequestTimeout = cmp.Or(k.RequestTimeout, Duration(10*time.Second))
		k.Lag.Window = cmp.Or(k.Lag.Window, Duration(5*time.Minute))
		k.Lag.StopAfter = cmp.Or(k.Lag.StopAfter, Duration(15*time.Minute))
		k.Lag.WarnMinLag = cmp.Or(k.Lag.WarnMinLag, 1)
		k.HangingTransactionAfter = cmp.Or(k.HangingTransactionAfter, Duration(5*time.Minute))
	}
	for i := range c.RabbitMQ {
		r := &c.RabbitMQ[i]
		if len(r.DeadLetterQueues) == 0 {
			r.DeadLetterQueues = []string{"*.dlq", "*.DLQ", "dead-letter*"}
		}
		if u, err := url.Parse(string(r.URL)); err == nil && u.User != nil {
			r.ManagementUser = cmp.Or(r.ManagementUser, u.User.Username())
			if p, ok := u.User.Password(); ok && r.ManagementPassword == "" {
				r.ManagementPassword = Secret(p)
			}
		}
	}
	for i := range c.Consumers {
		if in := c.Consumers[i].Inbox; in != nil {
			in.Format = cmp.Or(in.Format, InboxSeed)
			if in.Format == InboxEventuate {
				in.Table = cmp.Or(in.Table, "received_messages")
			}
			in.Table = cmp.Or(in.Table, "inbox_message")
			in.Columns = in.Columns.withDefaults(in.Format)
			in.Pool.applyDefaults(DefaultInboxMaxConns)
		}
	}
	if len(c.MessageID.Headers) == 0 && len(c.MessageID.JSONPaths) == 0 {
		c.MessageID = MessageIDRules{
			Headers:   []string{"messageId", "eventId", "message-id", "x-message-id", "originalMessageId"},
			JSONPaths: []string{"$.messageId", "$.eventId", "$.id"},
		}
	}
	c.Replay.MaxReplaysPerMessage = cmp.Or(c.Replay.MaxReplaysPerMessage, 3)
	c.Replay.DefaultRatePerSecond = cmp.Or(c.Replay.DefaultRatePerSecond, 200)
	c.Replay.Lease = cmp.Or(c.Replay.Lease, Duration(30*time.Second))
	c.Replay.OperatorMaxMessages = cmp.Or(c.Replay.OperatorMaxMessages, 10_000)
	c.Replay.FourEyes.Threshold = cmp.Or(c.Replay.FourEyes.Threshold, 1000)
	c.Replay.FourEyes.Window = cmp.Or(c.Replay.FourEyes.Window, Duration(time.Hour))
}

func (c OutboxColumns) withDefaults() OutboxColumns {
	c.ID = cmp.Or(c.ID, "id")
	c.EventID = cmp.Or(c.EventID, "event_id")
	c.AggregateType = cmp.Or(c.AggregateType, "aggregate_type")
	c.AggregateID = cmp.Or(c.AggregateID, "aggregate_id")
	c.EventType = cmp.Or(c.EventType, "event_type")
	c.SchemaVersion = cmp.Or(c.SchemaVersion, "schema_version")
	c.Payload = cmp.Or(c.Payload, "payload")
	c.Status = cmp.Or(c.Status, "status")
	c.Attempts = cmp.Or(c.Attempts, "attempts")
	c.AvailableAt = cmp.Or(c.AvailableAt, "available_at")
	c.LockedUntil = cmp.Or(c.LockedUntil, "locked_until")
	c.LastError = cmp.Or(c.LastError, "last_error")
	c.CreatedAt = cmp.Or(c.CreatedAt, "created_at")
	c.SentAt = cmp.Or(c.SentAt, "sent_at")
	return c
}

func (c InboxColumns) withDefaults(f InboxFormat) InboxColumns {
	c.MessageID = cmp.Or(c.MessageID, "message_id")
	if f == InboxEventuate {
		c.ConsumerID = cmp.Or(c.ConsumerID, "consumer_id")
		c.CreationTime = cmp.Or(c.CreationTime, "creation_time")
		return c
	}
	c.Consumer = cmp.Or(c.Consumer, "consumer")
	c.ReceivedAt = cmp.Or(c.ReceivedAt, "received_at")
	c.ProcessedAt = cmp.Or(c.ProcessedAt, "processed_at")
	return c
}

// fields are the columns of format f by their keys under columns:, and the keys of the other
// format that are set (refused), in the order they are documented.
func (c InboxColumns) fields(f InboxFormat) (own map[string]string, foreign []string) {
	seed := map[string]string{"message_id": c.MessageID, "consumer": c.Consumer, "received_at": c.ReceivedAt, "processed_at": c.ProcessedAt}
	if f == InboxEventuate {
		for _, k := range []string{"consumer", "received_at", "processed_at"} {
			if seed[k] != "" {
				foreign = append(foreign, k)
			}
		}
		return map[string]string{"message_id": c.MessageID, "consumer_id": c.ConsumerID, "creation_time": c.CreationTime}, foreign
	}
	if c.ConsumerID != "" {
		foreign = append(foreign, "consumer_id")
	}
	if c.CreationTime != "" {
		foreign = append(foreign, "creation_time")
	}
	return seed, foreign
}

var (
	nameRe       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	identifierRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
)

// Audit bounds what requests nobody is accountable for write to the audit log: refused anonymous
// requests (no identity, an unknown API token, a missing CSRF token) and failed sign-ins are
// recorded one by one up to these rates; past them they are counted, and one row a minute per
// client address (and one for the rest) says how many were left out and what they asked.
type Audit struct {
	// AnonymousPerAddress is how many such rows one client address (an IPv6 /64) may write a
	// minute. Default 20.
	AnonymousPerAddress int `yaml:"anonymous_per_address"`
	// AnonymousPerMinute is how many such rows all addresses together may write a minute.
	// Default 120.
	AnonymousPerMinute int `yaml:"anonymous_per_minute"`
}

func (a *Audit) applyDefaults() {
	a.AnonymousPerAddress = cmp.Or(a.AnonymousPerAddress, 20)
	a.AnonymousPerMinute = cmp.Or(a.AnonymousPerMinute, 120)
}

func (a *Audit) validate(bad func(key, format string, args ...any)) {
	if a.AnonymousPerAddress < 1 {
		bad("audit.anonymous_per_address", "must be at least 1")
	}
	if a.AnonymousPerMinute < a.AnonymousPerAddress {
		bad("audit.anonymous_per_minute", "must be at least audit.anonymous_per_address (%d)", a.AnonymousPerAddress)
	}
}

// Validate checks every field and cross-field rule; the error names the key, e.g. "kafka[0].brokers".
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "must be host:port, e.g. 127.0.0.1:8080 (%v)", err)
	}
	c.Auth.validate(c.Listen, bad)
	c.Notify.validate(bad)
	c.Audit.validate(bad)
	c.Redaction.validate(bad)
	c.MessageID.validate(bad)
	switch c.Log.Format {
	case "text", "json":
	default:
		bad("log.format", "must be text or json, got %q", c.Log.Format)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	if c.Store.DSN == "" {
		bad("store.dsn", "required: a PostgreSQL URL for the console's own schema")
	} else if err := checkPostgresDSN(string(c.Store.DSN)); err != nil {
		bad("store.dsn", "%v", err)
	}
	c.Store.Pool.validate("store.", bad)
	if c.RequestTimeout < 0 {
		bad("request_timeout", "must be positive")
	}
	if c.Sampler.Interval < Duration(time.Second) {
		bad("sampler.interval", "must be at least 1s")
	}
	if c.Sampler.MinRefresh < 0 || c.Sampler.MinRefresh > c.Sampler.Interval {
		bad("sampler.min_refresh", "must be between 0s and sampler.interval")
	}
	if c.Sampler.MaxServeAge < c.Sampler.MinRefresh {
		bad("sampler.max_serve_age", "must be at least sampler.min_refresh (%s)", time.Duration(c.Sampler.MinRefresh))
	}

	names := map[string]map[string]bool{}
	unique := func(kind, key, name string) {
		if names[kind] == nil {
			names[kind] = map[string]bool{}
		}
		switch {
		case name == "":
			bad(key, "required")
		case !nameRe.MatchString(name):
			bad(key, "%q must be letters, digits, '.', '_' or '-' (it appears in URLs)", name)
		case names[kind][name]:
			bad(key, "%q is used twice", name)
		}
		names[kind][name] = true
	}
	for i, o := range c.Outboxes {
		p := fmt.Sprintf("outboxes[%d]", i)
		unique("outbox", p+".name", o.Name)
		if o.DSN == "" {
			bad(p+".dsn", "required")
		} else if _, err := DatabaseOf(string(o.DSN)); err != nil {
			bad(p+".dsn", "%v", err)
		}
		if !validTable(o.Table) {
			bad(p+".table", "%q must be an identifier like outbox_event or schema.outbox_event", o.Table)
		}
		o.validateFormat(p, bad)
		if _, err := time.LoadLocation(o.TimeZone); err != nil || o.TimeZone == "Local" {
			bad(p+".time_zone", "%q is not a time zone: name one like UTC, Europe/Berlin or America/New_York", o.TimeZone)
		}
		if o.MaxAttempts < 0 {
			bad(p+".max_attempts", "must be positive")
		}
		o.Pool.validate(p+".", bad)
	}
	for i, k := range c.Kafka {
		p := fmt.Sprintf("kafka[%d]", i)
		unique("kafka", p+".name", k.Name)
		if len(k.Brokers) == 0 {
			bad(p+".brokers", "required: at least one host:port")
		}
		for j, b := range k.Brokers {
			if _, _, err := net.SplitHostPort(b); err != nil {
				bad(fmt.Sprintf("%s.brokers[%d]", p, j), "%q must be host:port", b)
			}
		}
		if k.HangingTransactionAfter < 0 {
			bad(p+".hanging_transaction_after", "must be positive (a Go duration such as 5m)")
		}
		if k.Lag.WarnAfterSeconds < 0 {
			bad(p+".lag.warn_after_seconds", "must not be negative")
		}
		if k.Lag.ErrorAfterSeconds < 0 {
			bad(p+".lag.error_after_seconds", "must not be negative")
		}
		if k.Lag.WarnAfterSeconds > 0 && k.Lag.ErrorAfterSeconds > 0 && k.Lag.ErrorAfterSeconds <= k.Lag.WarnAfterSeconds {
			bad(p+".lag.error_after_seconds", "must be above lag.warn_after_seconds")
		}
		for j, pat := range k.DeadLetterTopics {
			if _, err := path.Match(pat, ""); err != nil {
				bad(fmt.Sprintf("%s.dead_letter_topics[%d]", p, j), "bad pattern %q", pat)
			}
		}
		if k.SASL != nil {
			switch k.SASL.Mechanism {
			case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
			default:
				bad(p+".sasl.mechanism", "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got %q", k.SASL.Mechanism)
			}
		}
		if r := k.SchemaRegistry; r != nil {
			if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(p+".schema_registry.url", "required: an http:// or https:// URL")
			} else if u.User != nil {
				bad(p+".schema_registry.url", "put credentials in username and password, not in the URL")
			}
		}
		for j, ts := range k.Schemas {
			sp := fmt.Sprintf("%s.schemas[%d]", p, j)
			if len(ts.Topics) == 0 {
				bad(sp+".topics", "required: at least one topic pattern")
			}
			for n, pat := range ts.Topics {
				if _, err := path.Match(pat, ""); err != nil {
					bad(fmt.Sprintf("%s.topics[%d]", sp, n), "bad pattern %q", pat)
				}
			}
			if ts.Key == nil && ts.Value == nil {
				bad(sp, "give key, value or both")
			}
			for _, sf := range []struct {
				side string
				f    *SchemaFile
			}{{"key", ts.Key}, {"value", ts.Value}} {
				side, f := sf.side, sf.f
				switch {
				case f == nil:
				case f.AvroFile != "" && len(f.ProtoFiles) > 0:
					bad(sp+"."+side, "give avro_file or proto_files, not both")
				case f.AvroFile == "" && len(f.ProtoFiles) == 0:
					bad(sp+"."+side, "give avro_file or proto_files and message")
				case len(f.ProtoFiles) > 0 && f.Message == "":
					bad(sp+"."+side+".message", "required with proto_files: the fully qualified message name")
				}
			}
		}
	}
	for i, r := range c.RabbitMQ {
		p := fmt.Sprintf("rabbitmq[%d]", i)
		unique("rabbitmq", p+".name", r.Name)
		if u, err := url.Parse(string(r.URL)); err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") {
			bad(p+".url", "required: an amqp:// or amqps:// URL")
		}
		if u, err := url.Parse(r.ManagementURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(p+".management_url", "required: an http:// or https:// URL of the management plugin")
		}
		for j, pat := range r.DeadLetterQueues {
			if _, err := path.Match(pat, ""); err != nil {
				bad(fmt.Sprintf("%s.dead_letter_queues[%d]", p, j), "bad pattern %q", pat)
			}
		}
	}
	for i, cs := range c.Consumers {
		p := fmt.Sprintf("consumers[%d]", i)
		unique("consumer", p+".name", cs.Name)
		if cs.Inbox != nil {
			if cs.Inbox.DSN == "" {
				bad(p+".inbox.dsn", "required")
			} else if _, err := DatabaseOf(string(cs.Inbox.DSN)); err != nil {
				bad(p+".inbox.dsn", "%v", err)
			}
			if !validTable(cs.Inbox.Table) {
				bad(p+".inbox.table", "%q must be an identifier like inbox_message", cs.Inbox.Table)
			}
			switch f := cs.Inbox.Format; f {
			case InboxSeed, InboxEventuate:
				own, foreign := cs.Inbox.Columns.fields(f)
				for col, v := range own {
					if !identifierRe.MatchString(v) {
						bad(p+".inbox.columns."+col, "%q is not a plain SQL identifier", v)
					}
				}
				names := map[InboxFormat]string{InboxSeed: "message_id, consumer, received_at, processed_at",
					InboxEventuate: "message_id, consumer_id, creation_time"}
				for _, col := range foreign {
					bad(p+".inbox.columns."+col, "is not a column of the %s format (its columns: %s)", f, names[f])
				}
			default:
				bad(p+".inbox.format", "must be seed or eventuate, got %q", f)
			}
			cs.Inbox.Pool.validate(p+".inbox.", bad)
		}
		if cs.Kafka != nil && !names["kafka"][cs.Kafka.Cluster] {
			bad(p+".kafka.cluster", "%q is not a configured kafka cluster", cs.Kafka.Cluster)
		}
		if cs.RabbitMQ != nil && !names["rabbitmq"][cs.RabbitMQ.Broker] {
			bad(p+".rabbitmq.broker", "%q is not a configured rabbitmq broker", cs.RabbitMQ.Broker)
		}
	}
	for i, o := range c.Outboxes {
		r := o.RelayTo
		if r == nil {
			continue
		}
		p := fmt.Sprintf("outboxes[%d].relay_to", i)
		switch {
		case (r.Cluster != "") == (r.Broker != ""):
			bad(p, "give a Kafka topic (cluster and topic) or a RabbitMQ queue (broker and queue)")
		case r.Cluster != "" && !names["kafka"][r.Cluster]:
			bad(p+".cluster", "%q is not a configured kafka cluster", r.Cluster)
		case r.Cluster != "" && r.Topic == "":
			bad(p+".topic", "required with a cluster: the topic the relay produces to")
		case r.Broker != "" && !names["rabbitmq"][r.Broker]:
			bad(p+".broker", "%q is not a configured rabbitmq broker", r.Broker)
		case r.Broker != "" && r.Queue == "":
			bad(p+".queue", "required with a broker: the queue the relay's messages reach")
		}
	}
	if c.Replay.MaxReplaysPerMessage < 1 {
		bad("replay.max_replays_per_message", "must be at least 1")
	}
	if c.Replay.DefaultRatePerSecond < 1 {
		bad("replay.default_rate_per_second", "must be at least 1")
	}
	if c.Replay.FourEyes.Threshold < 0 {
		bad("replay.four_eyes.threshold", "must not be negative")
	}
	if w := c.Replay.FourEyes.Window.D(); w < time.Minute || w > 30*24*time.Hour {
		bad("replay.four_eyes.window", "must be between 1m and 720h, got %s", w)
	}
	for i, d := range c.Replay.AllowedDestinations {
		p := fmt.Sprintf("replay.allowed_destinations[%d]", i)
		if d.Kind != "kafka" && d.Kind != "rabbitmq" {
			bad(p+".kind", "must be kafka or rabbitmq")
		}
		for name, pattern := range map[string]string{"cluster": d.Cluster, "topic": d.Topic, "broker": d.Broker, "vhost": d.Vhost,
			"exchange": d.Exchange, "routing_key": d.RoutingKey} {
			if _, err := path.Match(pattern, ""); err != nil {
				bad(p+"."+name, "%q is not a valid pattern (*, ?, [...])", pattern)
			}
		}
	}
	if c.Search.MaxScan < 0 {
		bad("search.max_scan", "must be at least 1")
	}
	if c.Search.Timeout < 0 || (c.RequestTimeout > 0 && c.Search.Timeout >= c.RequestTimeout) {
		bad("search.timeout", "must be positive and below request_timeout (%s)", c.RequestTimeout.D())
	}
	for key, v := range map[string][2]int{"export.max_running": {c.Export.MaxRunning, c.Export.MaxRunningPerPerson},
		"search.max_running": {c.Search.MaxRunning, c.Search.MaxRunningPerPerson}} {
		if v[1] < 1 {
			bad(key+"_per_person", "must be at least 1")
		}
		if v[0] < v[1] {
			bad(key, "must be at least %s_per_person (%d)", key, v[1])
		}
	}
	if c.Export.WriteTimeout < Duration(time.Second) {
		bad("export.write_timeout", "must be at least 1s")
	}
	if c.Export.MinRole != "" && !validRole(c.Export.MinRole) {
		bad("export.min_role", "must be viewer, operator or admin, got %q", c.Export.MinRole)
	}
	return errors.Join(errs...)
}

// validateFormat checks outboxes[].format and the columns and settings of that format.
func (o Outbox) validateFormat(p string, bad func(key, format string, args ...any)) {
	if !slices.Contains(OutboxFormats, o.Format) {
		bad(p+".format", "must be seed, spring-modulith, namastack or debezium, got %q", o.Format)
		return
	}
	cols := o.Columns.fields()
	if o.Format != OutboxFormatSeed {
		cols = o.Columns.Other
	}
	for col, v := range cols {
		if o.Format != OutboxFormatSeed && !slices.Contains(OutboxFormatColumns[o.Format], col) {
			bad(p+".columns."+col, "is not a column of the %s format (its columns: %s)", o.Format,
				strings.Join(OutboxFormatColumns[o.Format], ", "))
			continue
		}
		if !identifierRe.MatchString(v) {
			bad(p+".columns."+col, "%q is not a plain SQL identifier", v)
		}
	}
	if o.Format == OutboxFormatSeed {
		for col := range o.Columns.Other {
			bad(p+".columns."+col, "is not a column of the seed format (its columns: id, event_id, aggregate_type, "+
				"aggregate_id, event_type, schema_version, payload, status, attempts, available_at, locked_until, "+
				"last_error, created_at, sent_at; set format: for another layout)")
		}
	}
	if o.Format != OutboxFormatSpringModulith {
		if o.CompletionMode != "" {
			bad(p+".completion_mode", "is a setting of format spring-modulith only")
		}
		if o.ArchiveTable != "" {
			bad(p+".archive_table", "is a setting of format spring-modulith only")
		}
		return
	}
	switch o.CompletionMode {
	case "update", "delete", "archive":
	default:
		bad(p+".completion_mode", "must be update, delete or archive (spring.modulith.events.completion-mode), got %q", o.CompletionMode)
	}
	if !validTable(o.ArchiveTable) {
		bad(p+".archive_table", "%q must be an identifier like event_publication_archive", o.ArchiveTable)
	}
}

func (c OutboxColumns) fields() map[string]string {
	return map[string]string{
		"id": c.ID, "event_id": c.EventID, "aggregate_type": c.AggregateType, "aggregate_id": c.AggregateID,
		"event_type": c.EventType, "schema_version": c.SchemaVersion, "payload": c.Payload, "status": c.Status,
		"attempts": c.Attempts, "available_at": c.AvailableAt, "locked_until": c.LockedUntil,
		"last_error": c.LastError, "created_at": c.CreatedAt, "sent_at": c.SentAt,
	}
}

func validTable(t string) bool {
	parts := strings.Split(t, ".")
	if len(parts) > 2 {
		return false
	}
	for _, p := range parts {
		if !identifierRe.MatchString(p) {
			return false
		}
	}
	return true
}

// Database is the kind of database a service's outbox or inbox lives in, named by its DSN's
// scheme: the adapter the console opens it with.
type Database string

// The databases an outbox or an inbox may live in.
const (
	PostgreSQL Database = "postgresql" // postgres:// or postgresql://
	MySQL      Database = "mysql"      // mysql:// (MySQL 8, MariaDB 10.6+)
)

// DatabaseOf reads the database of an outbox's or inbox's DSN from its scheme: postgres:// and
// postgresql:// URLs (as pgx reads them), or mysql://user:password@host:port/database?params. The
// error says what a right one looks like, never quoting the DSN (it may hold a password).
func DatabaseOf(dsn string) (Database, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", errors.New("must be a postgres:// or mysql:// URL")
	}
	switch u.Scheme {
	case "postgres", "postgresql":
		return PostgreSQL, nil
	case "mysql":
		db := strings.TrimPrefix(u.Path, "/")
		switch {
		case u.Opaque != "" || u.Hostname() == "":
			return "", errors.New("a mysql:// URL names its host: mysql://user:password@host:port/database")
		case db == "" || strings.Contains(db, "/"):
			return "", errors.New("a mysql:// URL names its database: mysql://user:password@host:port/database")
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return "", errors.New("a mysql:// URL's port must be 1-65535")
			}
		}
		return MySQL, nil
	}
	return "", errors.New("must be a postgres:// or mysql:// URL")
}

func checkPostgresDSN(dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return errors.New("must be a postgres:// URL")
	}
	return nil
}

// LoopbackListen reports whether the listen address is on loopback.
func (c *Config) LoopbackListen() bool {
	host, _, _ := net.SplitHostPort(c.Listen)
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
