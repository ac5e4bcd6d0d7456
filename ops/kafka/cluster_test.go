package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/tlstest"
)

func TestNewRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]configs.KafkaCluster{
		"NoBrokers":   {Name: "x"},
		"BadHeaders":  {Name: "x", Brokers: []string{"127.0.0.1:9092"}, Headers: map[string][]string{"original_topik": {"t"}}},
		"BadSASL":     {Name: "x", Brokers: []string{"127.0.0.1:9092"}, SASL: &configs.SASL{Mechanism: "GSSAPI"}},
		"BadPattern":  {Name: "x", Brokers: []string{"127.0.0.1:9092"}, DeadLetterTopics: []string{"["}},
		"MissingCert": {Name: "x", Brokers: []string{"127.0.0.1:9092"}, TLS: &configs.TLS{Enabled: true, CAFile: "/nonexistent.pem"}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(cfg, configs.MessageIDRules{}); !errors.Is(err, ops.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestUnavailable(t *testing.T) {
	c, err := New(configs.KafkaCluster{
		Name:           "down",
		Brokers:        []string{"127.0.0.1:1"}, // nothing listens on port 1
		RequestTimeout: configs.Duration(500 * time.Millisecond),
	}, configs.MessageIDRules{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("Ping: %v, want ErrUnavailable", err)
	}
	if _, err := c.Groups(ctx); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("Groups: %v, want ErrUnavailable", err)
	}
	if _, err := c.Records(ctx, RecordQuery{Topic: "t"}); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("Records: %v, want ErrUnavailable", err)
	}
}

// A cluster that needs TLS and SCRAM: the console connects with tls.ca_file and sasl, reads a
// topic's partitions and records; a wrong password or an untrusted certificate is an
// ops.ErrUnavailable, not a hang.
func TestTLSAndSASL(t *testing.T) {
	caFile, serverTLS, roots := tlstest.SelfSigned(t)
	broker := kfaketest.Cluster(t, kfake.TLS(serverTLS), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "console", "s3cret"), kfake.SeedTopics(2, "orders.DLT"))
	addrs := broker.ListenAddrs()

	// Write a dead letter with a client that authenticates the same way.
	prod, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: "console", Pass: "s3cret"}.AsSha256Mechanism()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	if err := prod.ProduceSync(ctxT(t), &kgo.Record{Topic: "orders.DLT", Partition: 1, Value: []byte(`{"messageId":"m-1"}`),
		Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")}}}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	connect := func(mod func(*configs.KafkaCluster)) *Cluster {
		cfg := configs.KafkaCluster{Name: "secure", Brokers: addrs, RequestTimeout: configs.Duration(3 * time.Second),
			TLS:  &configs.TLS{Enabled: true, CAFile: caFile},
			SASL: &configs.SASL{Mechanism: "SCRAM-SHA-256", Username: "console", Password: "s3cret"}}
		mod(&cfg)
		c, err := New(cfg, configs.MessageIDRules{JSONPaths: []string{"messageId"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	c := connect(func(*configs.KafkaCluster) {})
	parts, err := c.Partitions(ctxT(t), "orders.DLT")
	if err != nil || len(parts) != 2 || parts[1].End != 1 {
		t.Fatalf("partitions over TLS and SCRAM: %+v %v", parts, err)
	}
	var got []Record
	if err := c.Scan(ctxT(t), "orders.DLT", 1, 0, 1, func(r Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].DeadLetter == nil || got[0].DeadLetter.MessageID != "m-1" {
		t.Fatalf("records over TLS and SCRAM: %+v", got)
	}

	for name, mod := range map[string]func(*configs.KafkaCluster){
		"wrong password":        func(c *configs.KafkaCluster) { c.SASL.Password = "nope" },
		"untrusted certificate": func(c *configs.KafkaCluster) { c.TLS.CAFile = "" }, // the system roots do not know it
		"no TLS":                func(c *configs.KafkaCluster) { c.TLS = nil },
	} {
		start := time.Now()
		_, err := connect(mod).Partitions(ctxT(t), "orders.DLT")
		if !errors.Is(err, ops.ErrUnavailable) || time.Since(start) > 20*time.Second {
			t.Errorf("%s: %v after %s, want ErrUnavailable promptly", name, err, time.Since(start))
		}
	}
}
