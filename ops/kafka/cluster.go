// Package kafka is Redrive's view of one Kafka cluster: consumer-group lag and its Burrow-style
// status, dead-letter topics, record browsing, dead-letter header decoding and error grouping.
//
// It talks to Kafka through franz-go (kgo for reading records, kadm for admin calls) and returns
// only types it owns. Errors carry the ops error kinds: an unknown group or topic wraps
// ops.ErrNotFound, a bad partition, offset or limit is an ops.Invalid naming the valid range, and a
// broker that cannot be reached (or answers with a broker-side failure) wraps ops.ErrUnavailable.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"golang.org/x/sync/singleflight"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/schema"
	"github.com/redrive/redrive/ops/payload"
)

// Cluster is one configured Kafka cluster. It holds one long-lived kgo client (shared by the kadm
// admin client); record reads use short-lived direct consumers built from the same options. A
// Cluster is safe for concurrent use.
type Cluster struct {
	name     string
	cl       *kgo.Client
	adm      *kadm.Client
	base     []kgo.Opt // seed brokers, client ID, TLS, SASL, timeouts: shared by every consumer
	timeout  time.Duration
	patterns []string
	names    HeaderNames
	index    headerIndex // names, for decoding
	ids      configs.MessageIDRules
	schemas  *schema.Decoder // nil decodes nothing
	txnAfter time.Duration   // hanging_transaction_after

	pages  singleflight.Group // reads of a page in flight, shared by their concurrent readers (sharedPage)
	stamps stampCache         // time lag: timestamps of the records groups will consume next
	counts recordCounts       // dead-letter topics' data records, counted as they arrive

	prodMu      sync.Mutex           // guards prod, prodCalls and prodRetired
	prod        *kgo.Client          // the replay producer, made on first use and again after one was dropped or retired
	prodCalls   map[*kgo.Client]int  // Produce calls using each producer
	prodRetired map[*kgo.Client]bool // producers no longer used for new calls, closed when their last call returns
}

// New builds the clients for cfg. It does not dial: a broker that is down makes the first call
// (or Ping) fail with ops.ErrUnavailable, not New. ids are the rules that find a dead letter's
// message id. cfg.Headers is merged into DefaultHeaderNames; an unknown logical field there is an
// ops.ErrInvalid. Zero values get the same defaults configs.Load applies.
func New(cfg configs.KafkaCluster, ids configs.MessageIDRules) (*Cluster, error) {
	if len(cfg.Brokers) == 0 {
		return nil, fmt.Errorf("kafka %s: %w", cfg.Name, ops.Invalid("brokers", "at least one host:port is required"))
	}
	names, err := DefaultHeaderNames().Merge(cfg.Headers)
	if err != nil {
		return nil, fmt.Errorf("kafka %s: %w", cfg.Name, err)
	}
	timeout := cfg.RequestTimeout.D()
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	clientID := cfg.ClientID
	if clientID == "" {
		clientID = "redrive"
	}
	patterns := cfg.DeadLetterTopics
	if len(patterns) == 0 {
		patterns = []string{"*.DLT", "*-dlt", "*.dlq", "*-dlq", "*.retry*"}
	}
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("kafka %s: %w", cfg.Name, ops.Invalid("dead_letter_topics", fmt.Sprintf("bad pattern %q", p)))
		}
	}

	base := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(clientID),
		kgo.DialTimeout(timeout),
		// A request's own timeout (kadm sets it for admin calls) plus this overhead bounds how long
		// one broker round trip may take; RetryTimeout bounds the retries of a failing request, so
		// an unreachable broker fails a call after about one request timeout instead of retrying.
		kgo.RequestTimeoutOverhead(timeout),
		kgo.RetryTimeout(timeout),
		// The console's clients are short-lived readers on someone else's cluster: KIP-714 metrics
		// would be noise to its operators, and each client's push compressor costs megabytes.
		kgo.DisableClientMetrics(),
	}
	if cfg.TLS != nil && cfg.TLS.Enabled {
		tc, err := cfg.TLS.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kafka %s: %w", cfg.Name, err)
		}
		base = append(base, kgo.DialTLSConfig(tc))
	}
	if cfg.SASL != nil {
		user, pass := cfg.SASL.Username, string(cfg.SASL.Password)
		switch cfg.SASL.Mechanism {
		case "PLAIN":
			base = append(base, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			base = append(base, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			base = append(base, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("kafka %s: %w", cfg.Name,
				ops.Invalid("sasl.mechanism", fmt.Sprintf("must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got %q", cfg.SASL.Mechanism)))
		}
	}
	var schemas *schema.Decoder
	if cfg.SchemaRegistry != nil || len(cfg.Schemas) > 0 {
		if schemas, err = schema.New(schema.Options{Registry: cfg.SchemaRegistry, Files: cfg.Schemas,
			Timeout: min(timeout, 5*time.Second)}); err != nil {
			return nil, fmt.Errorf("kafka %s: %w", cfg.Name, err)
		}
	}
	cl, err := kgo.NewClient(base...)
	if err != nil {
		return nil, fmt.Errorf("kafka %s: client: %w", cfg.Name, err)
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(timeout.Milliseconds()))
	txnAfter := cfg.HangingTransactionAfter.D()
	if txnAfter <= 0 {
		txnAfter = DefaultHangingTransactionAfter
	}
	return &Cluster{
		txnAfter: txnAfter,
		name:     cfg.Name,
		cl:       cl,
		adm:      adm,
		base:     base,
		timeout:  timeout,
		patterns: patterns,
		names:    names,
		index:    indexNames(&names),
		ids:      ids,
		schemas:  schemas,
	}, nil
}

// Name is the cluster's configured name.
func (c *Cluster) Name() string { return c.name }

// Close releases the client's connections. Calls after Close fail.
func (c *Cluster) Close() {
	c.cl.Close()
	c.prodMu.Lock()
	prod := c.prod
	c.prod = nil
	c.prodMu.Unlock()
	if prod != nil {
		prod.Close()
	}
}

// Ping checks that some broker answers a metadata request, for /readyz. It returns an
// ops.ErrUnavailable when none does within the request timeout.
func (c *Cluster) Ping(ctx context.Context) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	if err := c.cl.Ping(ctx); err != nil {
		return c.fail("ping", err)
	}
	return nil
}

// bound gives ctx the cluster's request timeout unless it already ends sooner, so that a call
// against a dead broker returns instead of retrying until the caller gives up.
func (c *Cluster) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return ops.Bound(ctx, c.timeout)
}

// fail wraps err with the cluster, the operation and an ops error kind. Errors that already carry
// a kind keep it; Kafka's "unknown topic/group" becomes ErrNotFound; a caller's cancellation is
// passed through; everything else — dial failures, timeouts, broker error codes — is
// ErrUnavailable, since the request was valid and Kafka could not answer it.
func (c *Cluster) fail(op string, err error) error {
	switch {
	case errors.Is(err, ops.ErrNotFound), errors.Is(err, ops.ErrInvalid), errors.Is(err, ops.ErrConflict),
		errors.Is(err, ops.ErrUnavailable):
		return fmt.Errorf("kafka %s: %s: %w", c.name, op, err)
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID), errors.Is(err, kerr.GroupIDNotFound):
		return &ops.Error{Kind: ops.ErrNotFound, Message: fmt.Sprintf("kafka cluster %q: %s: not found", c.name, op),
			Err: fmt.Errorf("kafka %s: %s: %w", c.name, op, err)}
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("kafka %s: %s: %w", c.name, op, err)
	default:
		// The client's error names broker addresses: it is for the log.
		return ops.Unavailable(fmt.Errorf("kafka %s: %s: %w", c.name, op, err),
			"kafka cluster %q did not answer, or refused (%s); try again, or see the console's log for its error", c.name, op)
	}
}

// named quotes a topic or group name for a message, cut to EchoLimit bytes with "…" marking the
// cut. Every message naming a topic or group the caller gave quotes it through here.
func named(name string) string { return strconv.Quote(payload.Clip(name, EchoLimit)) }

// bounds are a partition's log start, end (high watermark) and last stable offsets. The last
// stable offset is where a read_committed consumer stops: the first offset of the oldest
// transaction still open on the partition, or the end when none is.
type bounds struct{ start, end, stable int64 }

// readable is where a read of isolation iso stops: the last stable offset for a committed read,
// the end for an uncommitted one.
func (b bounds) readable(iso Isolation) int64 {
	if iso == ReadUncommitted {
		return b.end
	}
	return b.stable
}

// partitionBounds lists the start and end offsets of every partition of the topics, concurrently.
// A topic that does not exist is an ops.ErrNotFound.
func (c *Cluster) partitionBounds(ctx context.Context, topics ...string) (map[string]map[int32]bounds, error) {
	out, err := c.existingBounds(ctx, topics...)
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		if _, ok := out[t]; !ok {
			return nil, ops.NotFound("topic %s not found", named(t))
		}
	}
	return out, nil
}

// existingBounds is partitionBounds leaving out the topics that do not exist, or were deleted
// while the offsets were asked: for a list of many topics, where one gone must not fail the rest.
func (c *Cluster) existingBounds(ctx context.Context, topics ...string) (map[string]map[int32]bounds, error) {
	type res struct {
		l   kadm.ListedOffsets
		err error
	}
	startCh, stableCh := make(chan res, 1), make(chan res, 1)
	go func() {
		l, err := c.adm.ListStartOffsets(ctx, topics...)
		startCh <- res{l, err}
	}()
	go func() {
		// read_committed's end: the last stable offset.
		l, err := c.adm.ListCommittedOffsets(ctx, topics...)
		stableCh <- res{l, err}
	}()
	ends, err := c.adm.ListEndOffsets(ctx, topics...)
	starts, stables := <-startCh, <-stableCh
	if err == nil {
		err = starts.err
	}
	if err == nil {
		err = stables.err
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[int32]bounds, len(topics))
topics:
	for _, t := range topics {
		if err := topicErr(ends, t); errors.Is(err, ops.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		ps := make(map[int32]bounds, len(ends[t]))
		for p, e := range ends[t] {
			s, ok := starts.l.Lookup(t, p)
			st, stOK := stables.l.Lookup(t, p)
			if gone(e.Err) || (ok && gone(s.Err)) || (stOK && gone(st.Err)) {
				continue topics
			}
			if e.Err != nil {
				return nil, fmt.Errorf("topic %s partition %d: end offset: %w", named(t), p, e.Err)
			}
			if !ok || s.Err != nil {
				return nil, fmt.Errorf("topic %s partition %d: start offset: %w", named(t), p, errOr(s.Err, "missing from the listing"))
			}
			if !stOK || st.Err != nil {
				return nil, fmt.Errorf("topic %s partition %d: last stable offset: %w", named(t), p, errOr(st.Err, "missing from the listing"))
			}
			// Listed one after the other, the three may straddle a write: keep start ≤ stable ≤ end.
			ps[p] = bounds{start: s.Offset, end: e.Offset, stable: min(max(st.Offset, s.Offset), e.Offset)}
		}
		out[t] = ps
	}
	return out, nil
}

// gone is whether a partition's error says its topic does not exist (any more).
func gone(err error) bool {
	return errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID)
}

// topicErr reports kadm's "this topic does not exist" marker (a lone partition -1 with an error)
// as ops.ErrNotFound.
func topicErr(l kadm.ListedOffsets, topic string) error {
	ps, ok := l[topic]
	if !ok {
		return ops.NotFound("topic %s not found", named(topic))
	}
	if m, ok := ps[-1]; ok && m.Err != nil {
		if gone(m.Err) {
			return ops.NotFound("topic %s not found", named(topic))
		}
		return m.Err
	}
	return nil
}

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}

// consumer builds a short-lived direct consumer reading the given partitions from exact offsets.
// It never joins a group or commits, so reading is invisible to the consumers being inspected.
// It reads as a read_committed consumer does (no record of an aborted transaction, nothing past
// the last stable offset) unless extra says otherwise (uncommitted()). Control records
// (transaction markers) are kept so that a read can see it reached the end offset even when the
// last offsets are markers rather than data.
func (c *Cluster) consumer(parts map[string]map[int32]kgo.Offset, maxPartBytes int32, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append(append([]kgo.Opt{}, c.base...), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	opts = append(opts, extra...)
	opts = append(opts,
		kgo.ConsumePartitions(parts),
		kgo.KeepControlRecords(),
		kgo.FetchMaxPartitionBytes(maxPartBytes),
		kgo.FetchMaxBytes(max(maxPartBytes, 4<<20)),
		kgo.FetchMaxWait(100*time.Millisecond),
		// Records deleted under us are an error to report, not a reason to silently jump.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	return cl, nil
}

// isRetryTopic reports whether a dead-letter topic is an intermediate retry topic rather than a
// final dead-letter topic.
func isRetryTopic(topic string) bool {
	if ok, _ := path.Match("*.retry*", topic); ok {
		return true
	}
	return strings.Contains(topic, ".retry") || strings.Contains(topic, "-retry")
}
