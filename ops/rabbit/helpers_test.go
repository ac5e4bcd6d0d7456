package rabbit

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
	"github.com/redrive/redrive/ops/rabbittest"
)

var testIDs = configs.MessageIDRules{Headers: []string{"messageId", "eventId"}, JSONPaths: []string{"meta.id", "id"}}

// env is one test's vhost, a Broker watching it and a channel to set things up with.
type env struct {
	rabbittest.Topology // declares on ch
	t                   testing.TB
	vhost               string
	url                 string
	mgmt                *rabbithole.Client
	b                   *Broker
	ch                  *amqp.Channel
	kept                *memKeeper // the Broker's Custodian
}

func newEnv(t testing.TB) *env {
	t.Helper()
	vhost, url, mgmt := rabbittest.NewVhost(t)
	b, err := New(rabbittest.Config(t, vhost), testIDs)
	if err != nil {
		t.Fatal(err)
	}
	b.firstWait, b.idleWait = 2*time.Second, 300*time.Millisecond
	keeper := &memKeeper{}
	b.SetCustodian(keeper)
	t.Cleanup(b.Close)
	_, ch := rabbittest.Channel(t, url)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	return &env{Topology: rabbittest.Topology{TB: t, Ch: ch}, t: t, vhost: vhost, url: url, mgmt: mgmt, b: b, ch: ch, kept: keeper}
}

// memKeeper is the package tests' Custodian: it keeps messages in memory, by CustodyLocator, as
// the console's archive does in PostgreSQL (ops/replay.Custody, tested against the store there).
// down makes Keep and Ping fail, as a store that does not answer.
type memKeeper struct {
	mu   sync.Mutex
	by   map[string]rabbitmodel.Delivery
	ids  []string // message ids in the order kept
	down bool
}

func (k *memKeeper) Keep(_ context.Context, broker, vhost, queue string, ds []rabbitmodel.Delivery, _ string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.down {
		return fmt.Errorf("%w: store down", ops.ErrUnavailable)
	}
	if k.by == nil {
		k.by = map[string]rabbitmodel.Delivery{}
	}
	for _, d := range ds {
		loc := d.CustodyLocator(broker, vhost, queue)
		if _, ok := k.by[loc]; !ok {
			k.by[loc] = d
			k.ids = append(k.ids, d.Message().MessageID)
		}
	}
	return nil
}

func (k *memKeeper) Ping(context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.down {
		return fmt.Errorf("%w: store down", ops.ErrUnavailable)
	}
	return nil
}

// keptIDs is the message ids kept so far.
func (k *memKeeper) keptIDs() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.ids...)
}

// version is the test broker's series rules.
func (e *env) rules() quorumRules {
	e.t.Helper()
	v, err := e.b.Version(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return rulesFor(v)
}

// publish sends with a publisher confirm and fails the test unless the broker acks it.
func (e *env) publish(exchange, key string, p amqp.Publishing) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dc, err := e.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, p)
	if err != nil {
		e.t.Fatalf("publish: %v", err)
	}
	if ok, err := dc.WaitContext(ctx); err != nil || !ok {
		e.t.Fatalf("publish not confirmed: ok=%v err=%v", ok, err)
	}
}

// depth is the queue's ready count as the broker has it now.
func (e *env) depth(queue string) int {
	e.t.Helper()
	return rabbittest.Depth(e.t, e.ch, queue)
}

func (e *env) waitDepth(queue string, n int) {
	e.t.Helper()
	rabbittest.WaitDepth(e.t, e.ch, queue, n, 10*time.Second)
}

// reject takes the queue's first ready message with basic.get and rejects it without requeueing,
// so the queue dead-letters it. t is the (sub)test calling.
func (e *env) reject(t *testing.T, queue string) {
	t.Helper()
	d, ok, err := e.ch.Get(queue, false)
	if err != nil || !ok {
		t.Fatalf("get %s: ok=%v err=%v", queue, ok, err)
	}
	if err := d.Reject(false); err != nil {
		t.Fatal(err)
	}
}

// drain takes every ready message with basic.get and acks it, returning them in order.
func (e *env) drain(queue string) []amqp.Delivery {
	e.t.Helper()
	var out []amqp.Delivery
	for {
		d, ok, err := e.ch.Get(queue, false)
		if err != nil {
			e.t.Fatalf("get %s: %v", queue, err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
		if err := d.Ack(false); err != nil {
			e.t.Fatal(err)
		}
	}
}

// policy applies a policy to queues matching pattern and waits until the management API shows
// it applied to each of queues (policies apply asynchronously).
func (e *env) policy(name, pattern string, def rabbithole.PolicyDefinition, queues ...string) {
	e.t.Helper()
	if _, err := e.mgmt.PutPolicy(e.vhost, name, rabbithole.Policy{Pattern: pattern, ApplyTo: "queues", Definition: def}); err != nil {
		e.t.Fatalf("put policy: %v", err)
	}
	for _, queue := range queues {
		rabbittest.WaitFor(e.t, 15*time.Second, "policy "+name+" on "+queue, func(ctx context.Context) bool {
			q, err := e.b.queueInfo(ctx, e.vhost, queue)
			return err == nil && q.Policy == name
		})
	}
}
