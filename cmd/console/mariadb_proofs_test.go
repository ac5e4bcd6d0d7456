package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/inbox/mysqlinbox"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
)

// The proofs of issue 35 that read the outcome with clients independent of the console: the
// mariadb command-line client for the services' tables, RabbitMQ's management API for the queues
// and kcat for the topics.

// mariadbCLI runs query with the mariadb client against the database of dsn (a mysql:// URL) and
// returns its rows, tab-separated, one a line.
func mariadbCLI(t *testing.T, dsn, query string) []string {
	t.Helper()
	bin, err := exec.LookPath("mariadb")
	if err != nil {
		t.Fatal("the mariadb client is not installed (apt-get install mariadb-client): it reads what the console changed")
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	cmd := exec.Command(bin, "--protocol=TCP", "-h", u.Hostname(), "-P", u.Port(), "-u", u.User.Username(), "-N", "-B",
		"-e", query, strings.TrimPrefix(u.Path, "/"))
	cmd.Env = append(cmd.Environ(), "MYSQL_PWD="+pw)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb -e %q: %v: %s", query, err, out)
	}
	return strings.Fields(strings.TrimSpace(string(out)))
}

// kcatKeys reads topic from the beginning with kcat, read_committed, and returns its records' keys.
func kcatKeys(t *testing.T, broker, topic string) []string {
	t.Helper()
	bin, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is not installed (apt-get install kcat): it reads what the console published")
	}
	out, err := exec.Command(bin, "-C", "-b", broker, "-X", "isolation.level=read_committed", "-t", topic, "-o", "beginning",
		"-e", "-q", "-f", "%k\n").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat %s: %v: %s", topic, err, out)
	}
	keys := strings.Fields(string(out))
	slices.Sort(keys)
	return keys
}

// deadLetterOf is a Spring-Kafka-style dead letter of message id, failed on topic's partition 0
// by group, keyed k-<id>.
func deadLetterOf(topic, group, id string) *kgo.Record {
	return &kgo.Record{Topic: topic + ".DLT", Partition: 0, Key: []byte("k-" + id), Value: []byte(fmt.Sprintf(`{"messageId":%q}`, id)),
		Headers: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte(topic)},
			{Key: "kafka_dlt-original-partition", Value: binary.BigEndian.AppendUint32(nil, 0)},
			{Key: "kafka_dlt-original-offset", Value: binary.BigEndian.AppendUint64(nil, 7)},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte(group)},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.acme.StockException")},
			{Key: "messageId", Value: []byte(id)},
		}}
}

// TestGuardedReplaysWithMariaDBInboxesCountedIndependently: a console whose consumers keep their
// inboxes in MariaDB — inventory-service the seed's inbox_message (Kafka orders and RabbitMQ
// orders.work), payments-service Eventuate's received_messages (Kafka payments) — plans and runs
// guarded replays of orders.DLT, payments.DLT and orders.dlq; what reached the original topics
// (kcat) and queues (the management API's counts, the ids through AMQP) is exactly what the
// inbox rows the mariadb client reads do not mark processed, and what they do stays dead.
func TestGuardedReplaysWithMariaDBInboxesCountedIndependently(t *testing.T) {
	ctx := waittest.Context(t, 4*time.Minute)
	svc := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, svc, mysqlinbox.SeedDDL)
	mysqltest.Exec(t, svc, mysqlinbox.EventuateDDL)
	// What the consumers processed: inventory-service o-2 (and o-3 received, not yet processed),
	// m-1 and m-4; payments-service p-1 and p-3, as Eventuate's duplicate detector writes rows.
	mysqltest.Exec(t, svc, `INSERT INTO inbox_message VALUES
		('o-2', 'inventory-service', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)), ('o-3', 'inventory-service', UTC_TIMESTAMP(6), NULL),
		('m-1', 'inventory-service', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)), ('m-4', 'inventory-service', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)),
		('p-2', 'shipping-service', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`)
	mysqltest.Exec(t, svc, `INSERT INTO received_messages (consumer_id, message_id, creation_time) VALUES
		('payments-service', 'p-1', ROUND(UNIX_TIMESTAMP(CURTIME(4)) * 1000)), ('payments-service', 'p-3', ROUND(UNIX_TIMESTAMP(CURTIME(4)) * 1000)),
		('refunds-service', 'p-2', ROUND(UNIX_TIMESTAMP(CURTIME(4)) * 1000))`)

	k := startKafka(t, map[string]int32{"orders": 1, "orders.DLT": 1, "payments": 1, "payments.DLT": 1})
	var dead []*kgo.Record
	for i := 1; i <= 6; i++ {
		dead = append(dead, deadLetterOf("orders", "inventory-service", fmt.Sprintf("o-%d", i)))
	}
	for i := 1; i <= 4; i++ {
		dead = append(dead, deadLetterOf("payments", "payments-service", fmt.Sprintf("p-%d", i)))
	}
	if err := kfaketest.Client(t, k.Cluster()).ProduceSync(ctx, dead...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	vhost, ch, mgmt := deadLetteredOrders(t, ctx, 8, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), DeliveryMode: amqp.Persistent, ContentType: "application/json",
			Body: []byte(fmt.Sprintf(`{"messageId":"m-%d"}`, i))}
	})
	rcfg := rabbittest.Config(t, vhost)
	base := startConsole(t, fmt.Sprintf(`
auth: {mode: none}
store: {dsn: %q}
kafka: [{name: main, brokers: [%q]}]
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
consumers:
  - name: inventory-service
    inbox: {dsn: %q}
    kafka: {cluster: main, group: inventory-service, topics: [orders]}
    rabbitmq: {broker: main, vhost: %q, queue: orders.work}
  - name: payments-service
    inbox: {dsn: %q, format: eventuate}
    kafka: {cluster: main, group: payments-service, topics: [payments]}
`, pgtest.NewDatabase(t), k.Addrs()[0], string(rcfg.URL), rcfg.ManagementURL, vhost, svc, vhost, svc))

	replayAll := func(source string, want map[string]int) replayJob {
		t.Helper()
		plan := do(t, nil, "POST", base+"/api/v1/replays/plan", "application/json", `{"source":`+source+`}`)
		p := decode[struct {
			PlanID  string         `json:"plan_id"`
			Actions map[string]int `json:"actions"`
		}](t, plan)
		for action, n := range want {
			if p.Actions[action] != n {
				t.Fatalf("plan of %s: %s = %d, want %d: %s", source, action, p.Actions[action], n, plan.body)
			}
		}
		job := decode[struct{ ID string }](t, do(t, nil, "POST", base+"/api/v1/replays", "application/json",
			fmt.Sprintf(`{"plan_id":%q,"reason":"stock fixed"}`, p.PlanID)))
		return waitReplay(t, base, job.ID, time.Minute)
	}

	// What the mariadb client says each consumer processed.
	inventory := mariadbCLI(t, svc, `SELECT message_id FROM inbox_message WHERE consumer = 'inventory-service' AND processed_at IS NOT NULL ORDER BY 1`)
	payments := mariadbCLI(t, svc, `SELECT message_id FROM received_messages WHERE consumer_id = 'payments-service' ORDER BY 1`)
	if strings.Join(inventory, " ") != "m-1 m-4 o-2" || strings.Join(payments, " ") != "p-1 p-3" {
		t.Fatalf("the mariadb client reads inventory-service %v, payments-service %v", inventory, payments)
	}
	unprocessed := func(prefix string, n int, processed []string, from int) []string {
		var out []string
		for i := from; i < from+n; i++ {
			id := fmt.Sprintf("%s-%d", prefix, i)
			if !slices.Contains(processed, id) {
				out = append(out, id)
			}
		}
		return out
	}

	t.Run("Kafka", func(t *testing.T) {
		// o-3 has a row without processed_at: in progress, kept too.
		j := replayAll(`{"kind":"kafka","cluster":"main","topic":"orders.DLT"}`, map[string]int{"publish": 4, "skip_processed": 1, "skip_in_progress": 1})
		if j.Status != "done" || j.Published != 4 || j.Skipped != 2 || j.Failed != 0 {
			t.Fatalf("orders job %+v", j)
		}
		want := []string{"k-o-1", "k-o-4", "k-o-5", "k-o-6"}
		if got := kcatKeys(t, k.Addrs()[0], "orders"); !slices.Equal(got, want) {
			t.Errorf("kcat reads %v on orders, want %v (not o-2, processed; not o-3, in progress)", got, want)
		}
	})

	t.Run("KafkaEventuateInbox", func(t *testing.T) {
		// p-2's rows are other consumers': they do not count for payments-service.
		j := replayAll(`{"kind":"kafka","cluster":"main","topic":"payments.DLT"}`, map[string]int{"publish": 2, "skip_processed": 2, "skip_in_progress": 0})
		if j.Status != "done" || j.Published != 2 || j.Skipped != 2 || j.Failed != 0 {
			t.Fatalf("payments job %+v", j)
		}
		var want []string
		for _, id := range unprocessed("p", 4, payments, 1) {
			want = append(want, "k-"+id)
		}
		if got := kcatKeys(t, k.Addrs()[0], "payments"); !slices.Equal(got, want) {
			t.Errorf("kcat reads %v on payments, want %v", got, want)
		}
	})

	t.Run("TraceAndDoctorOfTheEventuateInbox", func(t *testing.T) {
		a := getTrace(t, base, "message_id=p-1")
		if in := a.steps("inbox payments-service"); len(in) != 1 || !in[0].Found || !strings.HasPrefix(in[0].Detail, "processed by payments-service") {
			t.Errorf("inbox step of p-1: %s", a.dump())
		}
		if in := getTrace(t, base, "message_id=p-2").steps("inbox payments-service"); len(in) != 1 || in[0].Found ||
			in[0].Detail != "no row: not processed by payments-service" {
			t.Errorf("inbox step of p-2 (only refunds-service's row)")
		}
		rep := decode[struct {
			Checks []struct{ Target, Check, Status, Detail string }
		}](t, do(t, nil, "GET", base+"/api/v1/admin/doctor", "", ""))
		seen := 0
		for _, c := range rep.Checks {
			if c.Target != "inbox/payments-service" {
				continue
			}
			seen++
			if c.Status != "ok" || (c.Check == "columns" && !strings.Contains(c.Detail, "a row means processed")) {
				t.Errorf("doctor %s %s: %s %s", c.Target, c.Check, c.Status, c.Detail)
			}
		}
		if seen < 5 {
			t.Errorf("the doctor checked %d things of the eventuate inbox", seen)
		}
	})

	t.Run("RabbitMQ", func(t *testing.T) {
		j := replayAll(fmt.Sprintf(`{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":100}`, vhost),
			map[string]int{"publish": 6, "skip_processed": 2})
		if j.Status != "done" || j.Published != 6 || j.Skipped != 2 || j.Failed != 0 {
			t.Fatalf("orders.dlq job %+v", j)
		}
		// The management API's counts (its statistics lag: wait until they settle).
		var work, dlq int
		rabbittest.WaitFor(t, 30*time.Second, "the management API's counts", func(context.Context) bool {
			w, err1 := mgmt.GetQueue(vhost, "orders.work")
			d, err2 := mgmt.GetQueue(vhost, "orders.dlq")
			if err1 != nil || err2 != nil {
				return false
			}
			work, dlq = w.Messages, d.Messages
			return work == 6 && dlq == 2
		})
		replayed, kept := drainIDs(t, ch, "orders.work"), drainIDs(t, ch, "orders.dlq")
		slices.Sort(replayed)
		slices.Sort(kept)
		if want := unprocessed("m", 8, inventory, 0); !slices.Equal(replayed, want) {
			t.Errorf("orders.work holds %v, want %v", replayed, want)
		}
		if !slices.Equal(kept, []string{"m-1", "m-4"}) {
			t.Errorf("orders.dlq keeps %v, want m-1 and m-4 (processed)", kept)
		}
	})
}

// TestTwoOperatorsReleaseMariaDBLeasesOnce: two operators (two people's tokens) release the same
// 300 stuck leases of a MariaDB outbox through the console at the same moment, five rounds: each
// round they release 300 between them, never more (each row once), the relay's live lease is
// never touched, and the mariadb client reads every stuck row READY; the audit log holds each
// release with its count.
func TestTwoOperatorsReleaseMariaDBLeasesOnce(t *testing.T) {
	const stuck, rounds = 300, 5
	svc := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, svc, mysqloutbox.SeedDDL)
	mysqltest.Exec(t, svc, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, locked_until, created_at)
		VALUES ('live', 'Order', 'o-live', 'OrderPlaced', 1, '{}', 'PROCESSING', 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 1 HOUR, UTC_TIMESTAMP(6))`)
	token := func(name string) string {
		sum := sha256.Sum256([]byte("tok-" + name))
		return fmt.Sprintf("    - {name: %s, role: operator, owner: %s, sha256: %s}\n", name, name, hex.EncodeToString(sum[:]))
	}
	base := startConsole(t, fmt.Sprintf("store: {dsn: %q}\noutboxes: [{name: orders, dsn: %q}]\n%s",
		pgtest.NewDatabase(t), svc, basicAuth(token("otto-ops")+token("ada-ops"))))

	total := 0
	for round := range rounds {
		mysqltest.Exec(t, svc, fmt.Sprintf(`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
			payload, status, attempts, available_at, locked_until, created_at)
			SELECT concat('r%d-', seq), 'Order', concat('o-', seq), 'OrderPlaced', 1, '{}', 'PROCESSING', 1, UTC_TIMESTAMP(6),
				UTC_TIMESTAMP(6) - INTERVAL 5 MINUTE, UTC_TIMESTAMP(6) FROM seq_1_to_%d`, round, stuck))
		var got [2]int
		var bodies [2]string
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, who := range []string{"otto-ops", "ada-ops"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r := bearer(t, "POST", base+"/api/v1/outboxes/orders/leases/release", "tok-"+who, `{"all_stuck":true,"reason":"relay redeployed"}`)
				bodies[i] = fmt.Sprintf("%d %s", r.status, r.body)
				if r.status == 200 {
					got[i] = decode[struct{ Released int }](t, r).Released
				}
			}()
		}
		close(start)
		wg.Wait()
		if !strings.HasPrefix(bodies[0], "200 ") || !strings.HasPrefix(bodies[1], "200 ") || got[0]+got[1] != stuck {
			t.Fatalf("round %d: released %d + %d, want %d in all (%s; %s)", round, got[0], got[1], stuck, bodies[0], bodies[1])
		}
		t.Logf("round %d: otto-ops released %d, ada-ops %d", round, got[0], got[1])
		total += got[0] + got[1]
		rows := mariadbCLI(t, svc, `SELECT status, count(*) FROM outbox_event GROUP BY status ORDER BY status`)
		if want := []string{"PROCESSING", "1", "READY", fmt.Sprint((round + 1) * stuck)}; !slices.Equal(rows, want) {
			t.Fatalf("round %d: the mariadb client reads %v, want %v", round, rows, want)
		}
	}
	if live := mariadbCLI(t, svc, `SELECT concat(status, ':', locked_until > UTC_TIMESTAMP(6)) FROM outbox_event WHERE event_id = 'live'`); !slices.Equal(live, []string{"PROCESSING:1"}) {
		t.Errorf("the live lease's row: %v", live)
	}
	a := decode[struct {
		Entries []struct {
			Actor, Outcome string
			Count          *int64
		}
	}](t, bearer(t, "GET", base+"/api/v1/audit?action=outbox.release_leases&limit=100", "tok-admin", ""))
	audited := int64(0)
	for _, e := range a.Entries {
		if e.Outcome == "ok" && e.Count != nil {
			audited += *e.Count
		}
	}
	if audited != int64(total) {
		t.Errorf("the audit log counts %d released, the operators %d: %+v", audited, total, a.Entries)
	}
}
