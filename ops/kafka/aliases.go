package kafka

import "github.com/redrive/redrive/ops/kafka/kafkamodel"

// The adapter's own names for the model's types (ops/kafka/kafkamodel), so that it and its callers
// read as before. Domain packages import kafkamodel, which has no driver behind it.

type (
	Record           = kafkamodel.Record
	Header           = kafkamodel.Header
	RecordQuery      = kafkamodel.RecordQuery
	Page             = kafkamodel.Page
	Isolation        = kafkamodel.Isolation
	AcrossQuery      = kafkamodel.AcrossQuery
	AcrossPage       = kafkamodel.AcrossPage
	PartitionRange   = kafkamodel.PartitionRange
	Outgoing         = kafkamodel.Outgoing
	DeadLetter       = kafkamodel.DeadLetter
	HeaderNames      = kafkamodel.HeaderNames
	ErrorGroup       = kafkamodel.ErrorGroup
	ErrorScan        = kafkamodel.ErrorScan
	Group            = kafkamodel.Group
	Member           = kafkamodel.Member
	TopicPartitions  = kafkamodel.TopicPartitions
	TopicLag         = kafkamodel.TopicLag
	PartitionLag     = kafkamodel.PartitionLag
	GroupOffsets     = kafkamodel.GroupOffsets
	Membership       = kafkamodel.Membership
	TopicOffsets     = kafkamodel.TopicOffsets
	PartitionOffsets = kafkamodel.PartitionOffsets
	CopyRequest      = kafkamodel.CopyRequest
	CopyResult       = kafkamodel.CopyResult
	DLTopic          = kafkamodel.DLTopic
	DLPartition      = kafkamodel.DLPartition
	OpenTransaction  = kafkamodel.OpenTransaction
)

const (
	MaxValueBytes = kafkamodel.MaxValueBytes
	DefaultLimit  = kafkamodel.DefaultLimit
	MaxLimit      = kafkamodel.MaxLimit
	EchoLimit     = kafkamodel.EchoLimit

	ReadCommitted   = kafkamodel.ReadCommitted
	ReadUncommitted = kafkamodel.ReadUncommitted

	ConventionSpringDLT         = kafkamodel.ConventionSpringDLT
	ConventionSpringRetryTopic  = kafkamodel.ConventionSpringRetryTopic
	ConventionSpringCloudStream = kafkamodel.ConventionSpringCloudStream
	ConventionPlain             = kafkamodel.ConventionPlain
	ConventionCustom            = kafkamodel.ConventionCustom

	DefaultMaxScan = kafkamodel.DefaultMaxScan
	MaxMaxScan     = kafkamodel.MaxMaxScan

	GroupClassic  = kafkamodel.GroupClassic
	GroupConsumer = kafkamodel.GroupConsumer
	GroupShare    = kafkamodel.GroupShare

	DefaultHangingTransactionAfter = kafkamodel.DefaultHangingTransactionAfter
)

// DefaultHeaderNames is kafkamodel.DefaultHeaderNames.
func DefaultHeaderNames() HeaderNames { return kafkamodel.DefaultHeaderNames() }

// LastHeader is kafkamodel.LastHeader.
func LastHeader(headers []Header, names []string) string {
	return kafkamodel.LastHeader(headers, names)
}

// ErrNotAcknowledged is kafkamodel.ErrNotAcknowledged: the same error, so errors.Is matches either name.
var ErrNotAcknowledged = kafkamodel.ErrNotAcknowledged
