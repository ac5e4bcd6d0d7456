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
	"github.com/redrive/redrive/ops/rabbit"
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
	rep := doctor.New(cfg, doctor.Adapters{OpenOutbox: openOutbox, OpenInbox: openInbox}).Run(ctx)
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
	return doctor.Adapters{Store: a.store, Outboxes: keyed(a.outboxes, (*outbox.Outbox).Name),
		Inboxes: keyed(a.inboxes, (*inbox.Inbox).Consumer), Kafka: keyed(a.kafka, (*kafka.Cluster).Name),
		Rabbit: keyed(a.rabbit, (*rabbit.Broker).Name), OpenOutbox: openOutbox, OpenInbox: openInbox}
}

// keyed indexes the app's adapters (kept in config order) by key, as the doctor looks them up:
// one loop for the four kinds.
func keyed[T any](adapters []T, key func(T) string) map[string]T {
	m := make(map[string]T, len(adapters))
	for _, a := range adapters {
		m[key(a)] = a
	}
	return m
}
