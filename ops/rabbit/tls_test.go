package rabbit

import (
	"errors"
	"net/url"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/tlstest"
)

// A broker reached over amqps:// and https:// (TLS-terminating proxies in front of the test node):
// with tls.ca_file the console lists queues through the management API and browses a DLQ over
// AMQP; without the CA both fail as unavailable, not as a bad request or a hang.
func TestTLS(t *testing.T) {
	e := newEnv(t)
	e.Queue("orders.dlq", nil)
	e.publish("", "orders.dlq", amqp.Publishing{Body: []byte(`{"meta":{"id":"m-1"}}`)})
	e.waitDepth("orders.dlq", 1)

	caFile, server, _ := tlstest.SelfSigned(t)
	plain := rabbittest.Config(t, e.vhost)
	amqpURL, err := url.Parse(string(plain.URL))
	if err != nil {
		t.Fatal(err)
	}
	mgmtURL, err := url.Parse(plain.ManagementURL)
	if err != nil {
		t.Fatal(err)
	}
	amqpURL.Scheme, amqpURL.Host = "amqps", tlstest.Proxy(t, server, amqpURL.Host)
	mgmtURL.Scheme, mgmtURL.Host = "https", tlstest.Proxy(t, server, mgmtURL.Host)

	connect := func(ca string) *Broker {
		cfg := plain
		cfg.URL, cfg.ManagementURL = configs.Secret(amqpURL.String()), mgmtURL.String()
		cfg.TLS = &configs.TLS{Enabled: true, CAFile: ca}
		b, err := New(cfg, testIDs)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		return b
	}
	b := connect(caFile)
	queues, err := b.Queues(ctxT(t))
	if err != nil || len(queues) != 1 || queues[0].Name != "orders.dlq" {
		t.Fatalf("queues over https: %+v %v", queues, err)
	}
	res, err := b.Browse(ctxT(t), e.vhost, "orders.dlq", 10)
	if err != nil || len(res.Messages) != 1 || res.Messages[0].MessageID != "m-1" {
		t.Fatalf("browse over amqps: %+v %v", res.Messages, err)
	}
	untrusted := connect("") // the system roots do not know the test certificate
	if _, err := untrusted.Queues(ctxT(t)); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("queues without the CA: %v, want unavailable", err)
	}
	if _, err := untrusted.Browse(ctxT(t), e.vhost, "orders.dlq", 10); !errors.Is(err, ops.ErrUnavailable) {
		t.Errorf("browse without the CA: %v, want unavailable", err)
	}
}
