package doctor

import (
	"context"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// What the doctor asks of each system, declared here so that it imports no driver: ops/kafka,
// ops/rabbit and ops/store provide these, and cmd/console hands them over (Adapters). Each port
// also classifies its own errors, which only its driver can tell apart.

// KafkaCluster is a Kafka cluster as the doctor reads it (*kafka.Cluster).
type KafkaCluster interface {
	// Access is the principal's rights on every topic, from one metadata request.
	Access(ctx context.Context) (kafkamodel.Access, error)
	// GroupAccess lists the groups of every type and describes the named ones and some listed.
	GroupAccess(ctx context.Context, named ...string) (kafkamodel.GroupAccess, error)
	// TransactionAccess is what the principal may learn of the cluster's transactions.
	TransactionAccess(ctx context.Context) (kafkamodel.TransactionAccess, error)
	// TopicACLs are the ACLs that apply to topic; kafkamodel.ErrACLsNotAnswered when the cluster
	// does not answer DescribeACLs.
	TopicACLs(ctx context.Context, topic string) ([]kafkamodel.ACL, error)
	// CheckSchemaRegistry lists the subjects of the cluster's Schema Registry.
	CheckSchemaRegistry(ctx context.Context) (kafkamodel.RegistryCheck, error)
	IsDeadLetterTopic(topic string) bool
	OriginalTopicOf(dlt string) string

	// TopicDenied: err is TOPIC_AUTHORIZATION_FAILED.
	TopicDenied(err error) bool
	// GroupMissing: err is GROUP_ID_NOT_FOUND.
	GroupMissing(err error) bool
	// Refusal: err is an authorization refusal (…_AUTHORIZATION_FAILED).
	Refusal(err error) bool
	// Code is Kafka's error code in err, or "".
	Code(err error) string

	Close()
}

// RabbitBroker is a RabbitMQ broker as the doctor reads it (*rabbit.Broker).
type RabbitBroker interface {
	// Users are the AMQP user and the management API's user.
	Users() (amqpUser, managementUser string)
	// LoginVhosts are the vhosts whose AMQP login is checked.
	LoginVhosts() []string
	CheckLogin(ctx context.Context, vhost string) error
	// Whoami is the management user and its tags.
	Whoami(ctx context.Context) (user string, tags []string, err error)
	DLQTargets(ctx context.Context) ([]rabbitmodel.DLQTarget, error)
	PermissionsOf(ctx context.Context, user string) ([]rabbitmodel.Permission, error)
	// ProbeWrite publishes to exchange inside a transaction that is rolled back.
	ProbeWrite(ctx context.Context, vhost, exchange string) error
	Queues(ctx context.Context) ([]rabbitmodel.Queue, error)
	Version(ctx context.Context) (rabbitmodel.Version, error)

	// AccessRefused is the broker's reason when err is its ACCESS_REFUSED.
	AccessRefused(err error) (reason string, ok bool)
	// BrokerClosed: err is a close the broker sent, not a network or client failure.
	BrokerClosed(err error) bool
	// APIStatus is the HTTP status of a refused management API call; 0 when err is not one.
	APIStatus(err error) int

	Close()
}

// StoreSchema is Redrive's own PostgreSQL schema as the doctor reads it (ops/store).
type StoreSchema interface {
	// Inspect reads the facts without migrating anything: the running store's (dsn unused), or
	// over a connection to dsn made for the call.
	Inspect(ctx context.Context, dsn string) (StoreFacts, error)
	// Schema is the PostgreSQL schema that holds Redrive's tables.
	Schema() string
	// Ident quotes s for a statement to copy, only when it must be quoted.
	Ident(s string) string
}

// StoreFacts are what the doctor checks about the console's own database, read without
// migrating. ops/store reads them (store.Inspect).
type StoreFacts struct {
	User     string // current_user
	Database string // current_database()
	// SchemaExists: the redrive schema is there (the console has started against it before).
	SchemaExists bool
	// Applied are the migration versions recorded in redrive.schema_migrations.
	Applied []int
	// Pending are the embedded migrations not applied yet (file names), which the next start runs.
	Pending []string
	// CreateOnDatabase: the role may CREATE SCHEMA (needed when the schema does not exist).
	CreateOnDatabase bool
	// CreateOnSchema: the role may create tables in the schema (needed by pending migrations).
	CreateOnSchema bool
	// NotOwned are the schema's tables the role does not own (or inherit): a migration that
	// alters one of them fails.
	NotOwned    []string
	SchemaOwner string
}
