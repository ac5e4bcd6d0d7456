package health

import (
	"testing"
	"time"

	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// Two DLQs, vhost "prod" with queue "eu/orders.dlq" and vhost "prod/eu" with queue "orders.dlq",
// had one key, and the notifier keeps one problem per key: one of them was never notified. A
// vhost or queue holding "/" gets an escaped key; every key a subject without one (the default
// vhost "/" included) had stays as it was, so the notifier's record of those problems carries on.
func TestKeyQueueNamesWithSlashes(t *testing.T) {
	dlq := func(v, n string) queues.Queue {
		return queues.Queue{Queue: rabbitmodel.Queue{Vhost: v, Name: n, Type: "classic", Ready: 3, IsDeadLetterQueue: true},
			Lost: 2, LostAt: now, LostSince: now}
	}
	keys := map[string]string{}
	snap := queues.Snapshot{Broker: "main", At: now, Queues: []queues.Queue{
		dlq("prod", "eu/orders.dlq"), dlq("prod/eu", "orders.dlq"), dlq("prod", "eu%2Forders.dlq"), dlq("/", "/"),
		dlq("/", "orders.dlq"), dlq("prod", "orders.dlq"), dlq("//", "a"), dlq("/", "/a"),
	}, Gone: []queues.GoneQueue{{Vhost: "prod/eu", Name: "gone.dlq", Held: 4, Lost: 4, LostAt: now, LostSince: now, DeletedAt: now}}}
	for _, p := range RabbitProblems("main", snap, nil, now) {
		subject := p.Kind + " " + p.Labels["vhost"] + " | " + p.Labels["queue"]
		if other, dup := keys[p.Key]; dup {
			t.Errorf("%q and %q have one key %q", other, subject, p.Key)
		}
		keys[p.Key] = subject
	}
	if len(keys) != 2*len(snap.Queues)+1 {
		t.Errorf("%d keys for %d problems: %v", len(keys), 2*len(snap.Queues)+1, keys)
	}
	for k, subject := range map[string]string{
		"dead_letters/rabbitmq/main/prod/orders.dlq":          "dead_letters prod | orders.dlq",
		"dead_letters/rabbitmq/main///orders.dlq":             "dead_letters / | orders.dlq",
		"dead_letters_lost/rabbitmq/main///orders.dlq":        "dead_letters_lost / | orders.dlq",
		"dead_letters/rabbitmq/main/prod/eu%2Forders.dlq":     "dead_letters prod | eu%2Forders.dlq",
		"dead_letters%/rabbitmq/main/prod/eu%2Forders.dlq":    "dead_letters prod | eu/orders.dlq",
		"dead_letters%/rabbitmq/main/prod%2Feu/orders.dlq":    "dead_letters prod/eu | orders.dlq",
		"dead_letters_lost%/rabbitmq/main/prod%2Feu/gone.dlq": "dead_letters_lost prod/eu | gone.dlq",
	} {
		if keys[k] != subject {
			t.Errorf("key %q is %q, want %q", k, keys[k], subject)
		}
	}
	growing := queues.Queue{Queue: rabbitmodel.Queue{Vhost: "a/b", Name: "c"}, Growing: true, Growth: "ready 1 → 4 in 45s"}
	if ps := RabbitProblems("main", queues.Snapshot{Queues: []queues.Queue{growing}}, nil, time.Now()); len(ps) != 1 || ps[0].Key != "queue_growing%/main/a%2Fb/c" {
		t.Errorf("a growing queue in vhost a/b: %+v", ps)
	}
}
