package devstack

import (
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// DefaultKafkaAddr is where StartKafka listens when KafkaOptions.Addr is "".
const DefaultKafkaAddr = "127.0.0.1:19092"

// KafkaOptions configures StartKafka.
type KafkaOptions struct {
	// Addr is host:port to listen on. "" = DefaultKafkaAddr; port 0 picks a
	// free port ("127.0.0.1:0"). The host must be a concrete address
	// (clients are told to connect to it); it defaults to 127.0.0.1.
	Addr string
	// Topics to create at start: name → number of partitions
	// (< 1 means kfake's default).
	Topics map[string]int32
	// DisableAutoTopicCreation makes producing to an unknown topic fail
	// (UNKNOWN_TOPIC_OR_PARTITION) instead of creating it.
	DisableAutoTopicCreation bool
	// DataDir, if set, persists the cluster's data across restarts.
	DataDir string
	// Log, if set, receives kfake's log at warning level and above.
	Log io.Writer
}

// Kafka is an in-process, single-broker Kafka-protocol cluster (kfake).
type Kafka struct {
	c *kfake.Cluster
}

// StartKafka starts a kfake cluster with one broker on opts.Addr.
func StartKafka(opts KafkaOptions) (*Kafka, error) {
	addr := opts.Addr
	if addr == "" {
		addr = DefaultKafkaAddr
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("devstack: kafka: address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("devstack: kafka: address %q: bad port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return nil, fmt.Errorf("devstack: kafka: address %q: listen on a concrete address (kfake advertises its listen address to clients)", addr)
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		// kfake listens on 127.0.0.1:port already; this keeps the host
		// configurable without ever binding a wildcard address.
		kfake.ListenFn(func(network, a string) (net.Listener, error) {
			_, p, err := net.SplitHostPort(a)
			if err != nil {
				return nil, err
			}
			return net.Listen(network, net.JoinHostPort(host, p))
		}),
	}
	if !opts.DisableAutoTopicCreation {
		kopts = append(kopts, kfake.AllowAutoTopicCreation())
	}
	if opts.DataDir != "" {
		kopts = append(kopts, kfake.DataDir(opts.DataDir))
	}
	if opts.Log != nil {
		kopts = append(kopts, kfake.WithLogger(kfake.BasicLogger(opts.Log, kfake.LogLevelWarn)))
	}
	// SeedTopics takes one partition count per option: group by count.
	byParts := map[int32][]string{}
	for name, parts := range opts.Topics {
		byParts[parts] = append(byParts[parts], name)
	}
	for parts, names := range byParts {
		sort.Strings(names)
		kopts = append(kopts, kfake.SeedTopics(parts, names...))
	}
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("devstack: kafka: listen on %s: %w", net.JoinHostPort(host, portStr), err)
	}
	return &Kafka{c: c}, nil
}

// Addrs are the seed broker addresses (host:port) for clients.
func (k *Kafka) Addrs() []string { return k.c.ListenAddrs() }

// Cluster is the underlying kfake cluster, for tests that inject faults or
// inspect groups.
func (k *Kafka) Cluster() *kfake.Cluster { return k.c }

// Close shuts the cluster down.
func (k *Kafka) Close() { k.c.Close() }
