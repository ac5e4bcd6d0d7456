package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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

// HangingTransactionAfter is the configured threshold (hanging_transaction_after).
func (c *Cluster) HangingTransactionAfter() time.Duration { return c.txnAfter }

// OpenTransactions lists every transaction open on a partition of the cluster's topics (internal
// topics left out), oldest first. A partition or transactional id the console may not describe
// is left out (console doctor names the ACLs); the cluster not answering is an ops.ErrUnavailable.
func (c *Cluster) OpenTransactions(ctx context.Context) ([]OpenTransaction, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	details, err := c.adm.ListTopics(ctx)
	if err != nil {
		return nil, c.fail("list topics", err)
	}
	set := kadm.TopicsSet{}
	for _, d := range details.Sorted() {
		if d.Err != nil || d.IsInternal || strings.HasPrefix(d.Topic, "__") {
			continue
		}
		for p := range d.Partitions {
			set.Add(d.Topic, p)
		}
	}
	if len(set) == 0 {
		return []OpenTransaction{}, nil
	}
	described, err := c.adm.DescribeProducers(ctx, set)
	if err != nil && !partial(err) {
		return nil, c.fail("describe producers", err)
	}
	var out []OpenTransaction
	pids := map[int64]bool{}
	described.EachProducer(func(p kadm.DescribedProducer) {
		if p.CurrentTxnStartOffset < 0 {
			return
		}
		out = append(out, OpenTransaction{Topic: p.Topic, Partition: p.Partition, ProducerID: p.ProducerID,
			ProducerEpoch: p.ProducerEpoch, CoordinatorEpoch: p.CoordinatorEpoch, StartOffset: p.CurrentTxnStartOffset,
			LastWrite: time.UnixMilli(p.LastTimestamp).UTC(), Since: time.UnixMilli(p.LastTimestamp).UTC(), After: c.txnAfter})
		pids[p.ProducerID] = true
	})
	if len(out) == 0 {
		return []OpenTransaction{}, nil
	}
	ids := make([]int64, 0, len(pids))
	for id := range pids {
		ids = append(ids, id)
	}
	txnIDs := map[int64]string{}
	if listed, err := c.adm.ListTransactions(ctx, ids, nil); err == nil || partial(err) {
		for _, l := range listed {
			if pids[l.ProducerID] {
				txnIDs[l.ProducerID] = l.TxnID
			}
		}
	}
	var names []string
	for _, n := range txnIDs {
		names = append(names, n)
	}
	descs := kadm.DescribedTransactions{}
	if len(names) > 0 {
		if d, err := c.adm.DescribeTransactions(ctx, names...); err == nil || partial(err) {
			descs = d
		}
	}
	var topics []string
	for t := range set {
		topics = append(topics, t)
	}
	ends, _ := c.adm.ListEndOffsets(ctx, topics...)
	for i := range out {
		t := &out[i]
		if e, ok := ends.Lookup(t.Topic, t.Partition); ok && e.Err == nil {
			t.End = e.Offset
		}
		t.TransactionalID = txnIDs[t.ProducerID]
		d, ok := descs[t.TransactionalID]
		if t.TransactionalID == "" || !ok || d.Err != nil || d.ProducerID != t.ProducerID {
			// No coordinator knows this producer's transaction: find-hanging's "hanging". An id
			// the console may not describe reads the same; the doctor says when it may not.
			t.Hanging = true
			continue
		}
		t.State = d.State
		t.Timeout = time.Duration(d.TimeoutMillis) * time.Millisecond
		if d.StartTimestamp > 0 {
			t.Since, t.SinceKnown = time.UnixMilli(d.StartTimestamp).UTC(), true
		}
		_, inTxn := d.Topics[t.Topic][t.Partition]
		t.Hanging = !inTxn
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// partial reports whether err is kadm's "some brokers or partitions failed" (*kadm.ShardErrors)
// or an authorization refusal: the rest of the answer is good.
func partial(err error) bool {
	var se *kadm.ShardErrors
	var ae *kadm.AuthError
	return errors.As(err, &se) || errors.As(err, &ae) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed) ||
		errors.Is(err, kerr.TopicAuthorizationFailed)
}
