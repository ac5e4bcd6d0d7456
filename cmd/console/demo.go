package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/cmd/internal/devstack"
	"github.com/redrive/redrive/configs"
)

// demoCommand brings up the local stack, seeds it and serves the console on it until ctx ends;
// everything it started stops with it, and it says so. Ctrl-C is how a demo ends: once ctx is
// done, a step that failed because of it is not an error (make demo then exits 0).
func demoCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) (err error) {
	say := func(format string, a ...any) { fmt.Fprintf(stdout, "demo: "+format+"\n", a...) }
	var started []string // what to report as stopped, in the order it stops (last started first)
	defer func() {
		if ctx.Err() == nil {
			return
		}
		if err != nil {
			say("interrupted (%v)", err)
			err = nil
		}
		if len(started) > 0 {
			say("stopped %s", strings.Join(started, ", "))
		}
	}()
	err = runDemo(ctx, args, getenv, stdout, say, &started)
	return err
}

func runDemo(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, say func(string, ...any), started *[]string) error {
	stopped := func(what string) { *started = append(*started, what) }
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "console address")
	kafkaAddr := fs.String("kafka", devstack.DefaultKafkaAddr, "embedded Kafka address (for kcat and other clients)")
	dir := fs.String("dir", ".demo", "folder for the services' data and logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}
	rabbitOpts, rabbitName, err := demoRabbitMQ(ctx, getenv("REDRIVE_DEMO_RABBITMQ"), abs)
	if err != nil {
		return err
	}
	say("starting PostgreSQL and MariaDB…")
	pg, err := devstack.StartPostgres(ctx, devstack.PostgresOptions{Dir: filepath.Join(abs, "postgres")})
	if err != nil {
		return err
	}
	defer func() { _ = pg.Stop(context.WithoutCancel(ctx)); stopped("PostgreSQL") }() // best effort on the way out
	maria, err := devstack.StartMariaDB(ctx, devstack.MariaDBOptions{Dir: filepath.Join(abs, "mariadb")})
	if err != nil {
		return err
	}
	defer func() { _ = maria.Stop(context.WithoutCancel(ctx)); stopped("MariaDB") }()
	say("starting %s (about 10 s)…", rabbitName)
	rmq, err := devstack.StartRabbitMQ(ctx, rabbitOpts)
	if err != nil {
		return err
	}
	defer func() { _ = rmq.Stop(context.WithoutCancel(ctx)); stopped(rabbitName) }()
	kafka, err := devstack.StartKafka(devstack.KafkaOptions{Addr: *kafkaAddr})
	if err != nil {
		return err
	}
	defer func() { kafka.Close(); stopped("Kafka") }()
	registry, err := demo.StartSchemaRegistry("127.0.0.1:0")
	if err != nil {
		return err
	}
	defer func() { registry.Close(); stopped("the Schema Registry") }()
	webhook, err := demo.StartWebhookReceiver("127.0.0.1:0")
	if err != nil {
		return err
	}
	defer func() { webhook.Close(); stopped("the webhook receiver") }()

	// Every start is a fresh demo. Kafka lives in memory and is seeded anew, so everything else
	// is too: the services' databases, the RabbitMQ vhost and Redrive's own store, together (a
	// store kept over new brokers would call new records already replayed; brokers kept under a
	// new store listed a message twice in the archive and had no stuck leases left).
	say("fresh start: dropping the previous run's data (databases orders, redrive, refunds, ledger; RabbitMQ vhost /)…")
	if err := demo.Fresh(ctx, demo.Data{PostgresAdmin: pg.DSN("postgres"), PostgresDatabases: []string{"redrive", "orders"},
		MySQLAdmin: maria.DSN("mysql"), MySQLDatabases: []string{"refunds", "ledger"},
		AMQPURL: rmq.URL(), ManagementURL: rmq.ManagementURL()}); err != nil {
		return err
	}
	say("seeding data…")
	if err := demo.SeedOutbox(ctx, pg.DSN("orders")); err != nil {
		return err
	}
	if err := demo.SeedKafka(ctx, kafka.Addrs()); err != nil {
		return err
	}
	if err := demo.SeedRefunds(ctx, kafka.Addrs(), maria.DSN("refunds"), maria.DSN("ledger")); err != nil {
		return err
	}
	if err := demo.SeedModulith(ctx, maria.DSN("refunds")); err != nil {
		return err
	}
	if err := demo.SeedSchemaTopics(ctx, kafka.Addrs(), registry.Registry); err != nil {
		return err
	}
	log := newLogger(configs.Log{Format: "text", Level: "info"}, stdout)
	go demo.RunKafkaTraffic(ctx, kafka.Addrs())
	go demo.RunRelay(ctx, pg.DSN("orders"), kafka.Addrs(), log)
	go demo.RunRefunds(ctx, kafka.Addrs(), maria.DSN("refunds"), maria.DSN("ledger"), log)
	if err := demo.SeedRabbit(ctx, rmq.URL(), rmq.ManagementURL()); err != nil {
		return err
	}

	cfgText := fmt.Sprintf(`# Written by "console demo"; every option is described in configs/console.example.yaml.
listen: %q
auth: {mode: none}
store: {dsn: %q}
outboxes:
  - name: orders
    dsn: %q
    max_attempts: 10
    relay_to: {cluster: main, topic: orders}   # the demo's relay (cmd/internal/demo) produces there
  - name: refunds
    dsn: %q
    max_attempts: 10
    relay_to: {cluster: main, topic: refunds}
  - name: refunds-publications
    dsn: %q
    format: spring-modulith
kafka:
  - name: main
    brokers: [%q]
    schema_registry: {url: %q}
    lag: {warn_after_seconds: %d}  # inventory-service, days behind, is WARN (see cmd/internal/demo)
rabbitmq:
  - name: main
    url: %q
    management_url: %q
consumers:
  - name: inventory-service
    inbox: {dsn: %q, table: inbox_message}
    kafka: {cluster: main, group: inventory-service, topics: [orders]}
    rabbitmq: {broker: main, vhost: /, queue: orders.work}
  - name: ledger-service
    inbox: {dsn: %q}
    kafka: {cluster: main, group: ledger-service, topics: [refunds]}
sampler: {interval: 5s}
notify:
  interval: 10s
  channels:
    - {name: on-call, type: webhook, url: %q, secret: demo-secret}
  rules:
    - {match: {}, channels: [on-call]}
`, *listen, pg.DSN("redrive"), pg.DSN("orders"), maria.DSN("refunds"), maria.DSN("refunds"), kafka.Addrs()[0], registry.URL(), demo.WarnAfterSeconds, rmq.URL(), rmq.ManagementURL(),
		pg.DSN("orders"), maria.DSN("ledger"), webhook.URL())
	cfgPath := filepath.Join(abs, "console.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		return err
	}
	cfg, err := configs.Parse([]byte(cfgText), os.Getenv)
	if err != nil {
		return err
	}
	say("PostgreSQL  %s", pg.DSN("orders"))
	say("MariaDB     %s  (the refunds outbox; ledger-service's inbox in %s)", maria.DSN("refunds"), maria.DSN("ledger"))
	say("%-11s %s  (management %s, guest/guest)", rabbitName, rmq.URL(), rmq.ManagementURL())
	say("Kafka       %s  (e.g. kcat -b %s -L)", kafka.Addrs()[0], kafka.Addrs()[0])
	say("Schema Reg. %s  (franz-go srfake; Avro on invoices.DLT, Protobuf on shipments.DLT)", registry.URL())
	say("webhook     %s  (notifications land here; GET %s lists them)", webhook.URL(), webhook.ListURL())
	say("config      %s", cfgPath)
	say("console     http://%s   — Ctrl-C stops everything; the next start is fresh again", *listen)
	defer stopped("the console")
	go demo.SeedHistory(ctx, "http://"+*listen, say) // once the console answers: a replay, a discard, a requeue
	return serve(ctx, cfg, log, nil)
}

// demoRabbitMQ is the demo's RabbitMQ node, after REDRIVE_DEMO_RABBITMQ (version): unset, the
// host's RabbitMQ 3.10; 4, a RabbitMQ 4.0 node in devstack's Debian 13 root (built the first time,
// about 3 min). Each keeps its data in a folder of its own: a 4.0 node cannot open 3.10's.
func demoRabbitMQ(ctx context.Context, version, dir string) (opts devstack.RabbitOptions, name string, err error) {
	switch version {
	case "", "3":
		return devstack.RabbitOptions{Dir: filepath.Join(dir, "rabbitmq")}, "RabbitMQ", nil
	case "4":
		root, err := devstack.RabbitMQ4Root(ctx)
		if err != nil {
			return opts, "", err
		}
		return devstack.RabbitOptions{Dir: filepath.Join(dir, "rabbitmq4"), Root: root}, "RabbitMQ 4.0", nil
	}
	return opts, "", fmt.Errorf("REDRIVE_DEMO_RABBITMQ=%q: want 4 (RabbitMQ 4.0), or unset for the host's RabbitMQ 3.10", version)
}
