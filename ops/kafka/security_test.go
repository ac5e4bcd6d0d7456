package kafka

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
)

// A cluster that needs TLS and SCRAM: the console connects with tls.ca_file and sasl, reads a
// topic's partitions and records; a wrong password or an untrusted certificate is an
// ops.ErrUnavailable, not a hang.
func TestTLSAndSASL(t *testing.T) {
	caFile, serverTLS := selfSignedTLS(t)
	broker, err := kfake.NewCluster(kfake.Ports(0), kfake.TLS(serverTLS), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "console", "s3cret"), kfake.SeedTopics(2, "orders.DLT"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	addrs := broker.ListenAddrs()

	// Write a dead letter with a client that authenticates the same way.
	prod, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTLSConfig(&tls.Config{RootCAs: serverTLS.ClientCAs, MinVersion: tls.VersionTLS12}),
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

// selfSignedTLS makes a certificate for 127.0.0.1, writes it as the CA file a console would be given,
// and returns the server's TLS config (ClientCAs holds the certificate, for test clients to trust).
func selfSignedTLS(t *testing.T) (caFile string, server *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kfake"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return caFile, &tls.Config{MinVersion: tls.VersionTLS12, ClientCAs: pool,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}}}
}
