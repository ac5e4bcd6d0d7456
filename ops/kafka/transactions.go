package kafka

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

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
