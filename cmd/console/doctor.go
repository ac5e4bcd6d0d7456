package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/pgpool"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/store"
)

// errDoctorFailed makes `console doctor` exit 1 after printing its report.
var errDoctorFailed = errors.New("doctor: some checks failed")

// doctorCommand checks every dependency of the config file without changing anything and prints
// one line per check (or the report as JSON with --json); it fails when a check failed.
func doctorCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	path := fs.String("config", "configs/console.yaml", "config file")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := configs.Load(*path, getenv)
	if err != nil {
		return err
	}
	rep := doctor.New(cfg, doctor.Adapters{Store: doctorStore{}, OpenOutbox: openOutbox, OpenInbox: openInbox,
		OpenKafka: openKafka, OpenRabbit: openRabbit}).Run(ctx)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := doctor.WriteText(stdout, rep); err != nil {
		return err
	}
	if !rep.Passed() {
		return errDoctorFailed
	}
	return nil
}

// doctorAdapters hands the running adapters to the /doctor page's checks, so that they use the
// console's own connections.
func (a *app) doctorAdapters() doctor.Adapters {
	return doctor.Adapters{Store: doctorStore{running: a.store}, Outboxes: keyed(a.outboxes, (*outbox.Outbox).Name, same),
		Inboxes:    keyed(a.inboxes, (*inbox.Inbox).Consumer, same),
		Kafka:      keyed(a.kafka, (*kafka.Cluster).Name, func(c *kafka.Cluster) doctor.KafkaCluster { return c }),
		Rabbit:     keyed(a.rabbit, (*rabbit.Broker).Name, func(b *rabbit.Broker) doctor.RabbitBroker { return b }),
		OpenOutbox: openOutbox, OpenInbox: openInbox, OpenKafka: openKafka, OpenRabbit: openRabbit}
}

// keyed indexes the app's adapters (kept in config order) by key, as the doctor looks them up,
// each as the doctor's port of its kind: one loop for the four kinds.
func keyed[T, P any](adapters []T, key func(T) string, as func(T) P) map[string]P {
	m := make(map[string]P, len(adapters))
	for _, a := range adapters {
		m[key(a)] = as(a)
	}
	return m
}

func same[T any](a T) T { return a }

// The doctor declares what it asks of each system (ops/doctor/ports.go); the adapters provide it.
var (
	_ doctor.KafkaCluster = (*kafka.Cluster)(nil)
	_ doctor.RabbitBroker = (*rabbit.Broker)(nil)
	_ doctor.StoreSchema  = doctorStore{}
)

// openKafka and openRabbit connect the doctor to a cluster or a broker the console is not running.
// A failure is a nil port, not a nil pointer in one.
func openKafka(kc configs.KafkaCluster, ids configs.MessageIDRules) (doctor.KafkaCluster, error) {
	c, err := kafka.New(kc, ids)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func openRabbit(rc configs.RabbitMQBroker, ids configs.MessageIDRules) (doctor.RabbitBroker, error) {
	b, err := rabbit.New(rc, ids)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// doctorStore is ops/store as the doctor reads it: the running store, or (running nil) a
// connection to the DSN made for the call.
type doctorStore struct{ running *store.Store }

func (s doctorStore) Inspect(ctx context.Context, dsn string) (doctor.StoreFacts, error) {
	if s.running != nil {
		return s.running.Inspect(ctx)
	}
	return store.Inspect(ctx, dsn)
}

func (doctorStore) Schema() string        { return store.Schema }
func (doctorStore) Ident(s string) string { return pgpool.Ident(s) }
