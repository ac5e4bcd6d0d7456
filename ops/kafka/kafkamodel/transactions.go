package kafkamodel

import (
	"fmt"
	"time"
)

// DefaultHangingTransactionAfter is configs.KafkaCluster.HangingTransactionAfter's default.
const DefaultHangingTransactionAfter = 5 * time.Minute

// OpenTransaction is a transaction open on one partition, found the way Kafka's own
// kafka-transactions.sh find-hanging finds them: the partition leader's producer state
// (DescribeProducers: a producer with a current transaction start offset), the producer's
// transactional id (ListTransactions) and the coordinator's view of it (DescribeTransactions).
//
// While it is open it holds the partition's last stable offset at StartOffset: read_committed
// consumers of the partition get nothing past it, whatever else is written after.
type OpenTransaction struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	// TransactionalID is the producer's, as its coordinator lists it; "" when no coordinator
	// knows the producer id (the console may not DESCRIBE it, or the transaction is hanging).
	TransactionalID string
	// State is the coordinator's state of the transactional id (Ongoing, PrepareCommit,
	// PrepareAbort, …); "" when unknown.
	State string
	// StartOffset is the first offset of the transaction on the partition: the last stable
	// offset while it is open. End is the partition's high watermark when read: End −
	// StartOffset offsets are held back from read_committed consumers.
	StartOffset, End int64
	// Since is when the transaction began: the coordinator's start time, or, when the coordinator
	// does not say, the producer's last write to the partition (it has been open at least since).
	Since time.Time
	// SinceKnown is false when Since is the last write, a lower bound of the age.
	SinceKnown bool
	// LastWrite is the producer's last write to the partition.
	LastWrite time.Time
	// Timeout is the transaction's timeout as the coordinator has it (the coordinator aborts it
	// past this); 0 when unknown.
	Timeout time.Duration
	// Hanging is find-hanging's verdict: the coordinator does not list this partition in the
	// producer's current transaction (or knows no transaction of the producer), so no coordinator
	// will ever write its marker, and the partition stays held until an admin aborts it there.
	Hanging bool
	// After is the cluster's hanging_transaction_after: open longer than this, it is a problem.
	After time.Duration
}

// Open is how long the transaction has been open at now.
func (t OpenTransaction) Open(now time.Time) time.Duration { return max(now.Sub(t.Since), 0) }

// Overdue reports whether it has been open longer than After at now.
func (t OpenTransaction) Overdue(now time.Time) bool { return t.Open(now) > t.After }

// Held is how many offsets it holds back from read_committed consumers (End − StartOffset).
func (t OpenTransaction) Held() int64 { return max(t.End-t.StartOffset, 0) }

// AbortCommand is Kafka's own command that aborts it on its partition (an admin's, with the
// CLUSTER_ACTION right brokers use to write transaction markers): for a hanging transaction only.
func (t OpenTransaction) AbortCommand(bootstrap string) string {
	return fmt.Sprintf("kafka-transactions.sh --bootstrap-server %s abort --topic %s --partition %d --start-offset %d",
		bootstrap, t.Topic, t.Partition, t.StartOffset)
}
