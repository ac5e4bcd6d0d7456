// Package kfaketest starts the in-process Kafka the tests run against (franz-go's kfake): on a
// loopback port of its own, closed at cleanup, so a test needs no broker of the machine's; and
// the clients and commits a test makes on it.
package kfaketest

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/waittest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Cluster is a kfake cluster on a free loopback port with opts (seeded topics, SASL, ACLs, TLS,
// old protocol versions), failing tb when it cannot start or listens elsewhere than on loopback,
// and closed when tb ends.
func Cluster(tb testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	tb.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.Ports(0)}, opts...)...)
	if err != nil {
		tb.Fatalf("kfake: %v", err)
	}
	tb.Cleanup(c.Close)
	// kfake listens on 127.0.0.1, and port 0 lets the kernel choose: a test needs nothing more.
	for _, a := range c.ListenAddrs() {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			tb.Fatalf("kfake listens on %s, want loopback", a)
		}
	}
	return c
}

// Client is a franz-go client of the test's own on c with opts (a producer, a group member, a
// transactional writer), failing tb when it cannot be made and closed when tb ends.
func Client(tb testing.TB, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	tb.Helper()
	return ClientAt(tb, c.ListenAddrs(), opts...)
}

// ClientAt is Client of the brokers at addrs (a kfake of External's, in its own process).
func ClientAt(tb testing.TB, addrs []string, opts ...kgo.Opt) *kgo.Client {
	tb.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		tb.Fatalf("kafka client: %v", err)
	}
	tb.Cleanup(cl.Close)
	return cl
}

// Commit commits offsets of topic's partitions for group without members (an admin commit, as
// a consumer that stopped left them), failing tb when it cannot.
func Commit(tb testing.TB, adm *kadm.Client, group, topic string, offsets map[int32]int64) {
	tb.Helper()
	os := kadm.Offsets{}
	for p, o := range offsets {
		os.AddOffset(topic, p, o, -1)
	}
	if err := adm.CommitAllOffsets(waittest.Context(tb, 30*time.Second), group, os); err != nil {
		tb.Fatalf("commit %s: %v", group, err)
	}
}

// Transaction writes recs (Topic and Partition set by the caller; the client partitions
// manually) in one transaction of the transactional id txnID on c, and commits it, or aborts it
// when commit is false: the records a transactional producer such as Spring's
// KafkaTransactionManager leaves behind when the listener's transaction rolls back. It fails tb
// when any step fails.
func Transaction(tb testing.TB, c *kfake.Cluster, txnID string, commit bool, recs ...*kgo.Record) {
	tb.Helper()
	end := OpenTransaction(tb, c, txnID, recs...)
	end(commit)
}

// OpenTransaction begins a transaction of txnID on c, writes recs in it and leaves it open: the
// open transaction holds the partitions' last stable offsets until end is called (commit or
// abort). end fails tb when ending fails; it is safe to call once.
func OpenTransaction(tb testing.TB, c *kfake.Cluster, txnID string, recs ...*kgo.Record) (end func(commit bool)) {
	tb.Helper()
	cl := Client(tb, c, kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(time.Minute))
	ctx := waittest.Context(tb, 30*time.Second)
	if err := cl.BeginTransaction(); err != nil {
		tb.Fatalf("begin transaction %s: %v", txnID, err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		tb.Fatalf("produce in transaction %s: %v", txnID, err)
	}
	return func(commit bool) {
		tb.Helper()
		how := kgo.TryAbort
		if commit {
			how = kgo.TryCommit
		}
		if err := cl.EndTransaction(waittest.Context(tb, 30*time.Second), how); err != nil {
			tb.Fatalf("end transaction %s (commit %v): %v", txnID, commit, err)
		}
	}
}
