// Package kfaketest starts the in-process Kafka the tests run against (franz-go's kfake): on a
// loopback port of its own, closed at cleanup, so a test needs no broker of the machine's.
package kfaketest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Cluster is a kfake cluster on a free loopback port with opts (seeded topics, SASL, ACLs, TLS,
// old protocol versions), failing tb when it cannot start and closed when tb ends.
func Cluster(tb testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	tb.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.Ports(0)}, opts...)...)
	if err != nil {
		tb.Fatalf("kfake: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}
