package replay_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/inbox/mysqlinbox"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/storetest"
)

// The guarded replays of issue 35: a consumer whose inbox is in MariaDB (mysql:// DSN) is asked,
// as one in PostgreSQL is, at plan time and again for each message just before it is published.

// mariadbInbox is inventory-service's inbox in a fresh MariaDB database, opened as the console
// opens a consumers[].inbox of a mysql:// DSN, and the database's URL.
func mariadbInbox(tb testing.TB) (*inbox.Inbox, string) {
	tb.Helper()
	dsn := mysqltest.NewDatabase(tb)
	mysqltest.Exec(tb, dsn, mysqlinbox.SeedDDL)
	cfg, err := configs.Parse([]byte(`
auth: {mode: none}
store: {dsn: "postgres://x@127.0.0.1/y"}
consumers: [{name: inventory-service, inbox: {dsn: "`+dsn+`"}}]`), func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	in, err := mysqlinbox.Open(ctxT(tb), "inventory-service", *cfg.Consumers[0].Inbox)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(in.Close)
	return in, dsn
}

// processedIn records ids as processed by inventory-service in the MariaDB inbox at dsn, as the
// consumer's INSERT … ON DUPLICATE KEY UPDATE would; inProgress ones without processed_at.
func processedIn(tb testing.TB, dsn string, processed bool, ids ...string) {
	tb.Helper()
	for _, id := range ids {
		mysqltest.Exec(tb, dsn, `INSERT INTO inbox_message VALUES (?, 'inventory-service', UTC_TIMESTAMP(6), IF(?, UTC_TIMESTAMP(6), NULL))
			ON DUPLICATE KEY UPDATE processed_at = VALUES(processed_at)`, id, processed)
	}
}

func TestKafkaReplayWithAMariaDBInboxSkipsWhatItProcessed(t *testing.T) {
	w := newWorld(t)
	in, dsn := mariadbInbox(t)
	w.inbox = in
	for i, id := range []string{"m-1", "m-2", "m-3", "m-4", "m-5"} {
		w.deadLetter(t, 0, id, "k-"+id[2:], []string{"com.acme.StockException", "com.acme.PriceException"}[i%2])
	}
	processedIn(t, dsn, true, "m-2")
	processedIn(t, dsn, false, "m-3") // received, maybe mid-transaction
	e := w.engine(t, "a")
	ctx := ctxT(t)

	plan, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 99), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Total != 5 || plan.Counts[replay.Publish] != 3 || plan.Counts[replay.SkipProcessed] != 1 || plan.Counts[replay.SkipInProgress] != 1 {
		t.Fatalf("plan counts %v (total %d)", plan.Counts, plan.Total)
	}
	// The consumer takes m-4 between the plan and the run: the job asks its inbox again.
	processedIn(t, dsn, true, "m-4")
	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "fixed stock bug", RatePerSecond: 1000})
	if job.Status != replay.JobDone || job.Published != 2 || job.Skipped != 3 || job.Failed != 0 {
		t.Fatalf("job %+v", job)
	}
	got := w.originals(t)
	if len(got) != 2 {
		t.Fatalf("%d records on the original topic, want 2 (m-1, m-5)", len(got))
	}
	for _, r := range got {
		if id, _ := header(r, "messageId"); id != "m-1" && id != "m-5" {
			t.Errorf("%s was republished", id)
		}
	}
}

func TestRabbitReplayWithAMariaDBInboxSkipsWhatItProcessed(t *testing.T) {
	w := newRabbitWorld(t)
	in, dsn := mariadbInbox(t)
	w.inbox = in
	w.deadLetter(t, 10)
	processedIn(t, dsn, true, "m-1", "m-4")
	e := w.engine(t)
	plan := w.planQueue(t, e, 100, replay.Filter{})
	if plan.Total != 10 || plan.Counts[replay.Publish] != 8 || plan.Counts[replay.SkipProcessed] != 2 {
		t.Fatalf("plan %v", plan.Counts)
	}
	processedIn(t, dsn, true, "m-7") // processed after the plan: skipped at the run
	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1000})
	if job.Status != replay.JobDone || job.Published != 7 || job.Skipped != 3 || job.Failed != 0 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", 7)
	w.waitDepth(t, "orders.dlq", 3)
	for _, d := range w.drain(t, "orders.work") {
		if d.MessageId == "m-1" || d.MessageId == "m-4" || d.MessageId == "m-7" {
			t.Fatalf("processed message %s was replayed", d.MessageId)
		}
	}
	left := w.drain(t, "orders.dlq")
	if len(left) != 3 || left[0].MessageId != "m-1" || left[1].MessageId != "m-4" || left[2].MessageId != "m-7" {
		t.Fatalf("kept messages %v", ids(left))
	}
}

// A guarded outbox replay of a MariaDB outbox requeues its DEAD and FAILED events (attempts reset
// when asked), skips the rest, and leaves a row a relay holds alone.
func TestOutboxReplayOfAMariaDBOutbox(t *testing.T) {
	dsn := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, dsn, mysqloutbox.SeedDDL)
	mysqltest.Exec(t, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, last_error, created_at)
		VALUES ('e1','Order','o1','OrderCreated',1,'{}','DEAD',10,UTC_TIMESTAMP(6),'boom',UTC_TIMESTAMP(6)),
		       ('e2','Order','o2','OrderCreated',1,'{}','SENT',1,UTC_TIMESTAMP(6),NULL,UTC_TIMESTAMP(6)),
		       ('e3','Order','o3','OrderPaid',1,'{}','FAILED',3,UTC_TIMESTAMP(6),'java.net.SocketTimeoutException: read timed out',UTC_TIMESTAMP(6))`)
	cfg, err := configs.Parse([]byte("auth: {mode: none}\nstore: {dsn: \"postgres://x@127.0.0.1/y\"}\noutboxes: [{name: orders, dsn: \""+dsn+"\"}]\n"),
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	o, err := mysqloutbox.Open(ctxT(t), cfg.Outboxes[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	e, err := replay.New(replay.Options{Store: storetest.Open(t), Outboxes: []replay.OutboxTable{o}, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "ops", replay.Source{Kind: "outbox", Outbox: "orders", IDs: []int64{1, 2, 3}, ResetAttempts: true}, replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Counts[replay.Publish] != 2 || plan.Counts[replay.SkipUnresolvable] != 1 {
		t.Fatalf("plan %v", plan.Counts)
	}
	byFilter, err := e.Plan(ctx, "ops", replay.Source{Kind: "outbox", Outbox: "orders", Limit: 10, Status: "FAILED"},
		replay.Filter{ExceptionType: "SocketTimeoutException"})
	if err != nil || byFilter.Total != 1 || byFilter.Items[0].MessageID != "e3" {
		t.Fatalf("plan by filter: %+v %v", byFilter.Counts, err)
	}
	work(t, e)
	if job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}}); job.Published != 2 || job.Skipped != 1 {
		t.Fatalf("job %+v", job)
	}
	for _, id := range []int64{1, 3} {
		ev, err := o.Event(ctx, id)
		if err != nil || ev.Status != outbox.Ready || ev.Attempts != 0 {
			t.Fatalf("event %d (requeued with its attempts reset): %+v %v", id, ev, err)
		}
	}
	if ev, err := o.Event(ctx, 2); err != nil || ev.Status != outbox.Sent {
		t.Fatalf("event 2: %+v %v", ev, err)
	}
}

// eventuateInbox is inventory-service's inbox as Eventuate Tram keeps it — received_messages, a
// row per message its handler's transaction processed — in a fresh database of dsn's kind
// (MariaDB or PostgreSQL), opened as the console opens a consumers[].inbox of format eventuate.
// record writes rows as Eventuate's duplicate detector does.
func eventuateInbox(tb testing.TB, mariadb bool) (in *inbox.Inbox, record func(ids ...string)) {
	tb.Helper()
	var dsn string
	open := pginbox.OpenEventuate
	if mariadb {
		dsn, open = mysqltest.NewDatabase(tb), mysqlinbox.OpenEventuate
		mysqltest.Exec(tb, dsn, mysqlinbox.EventuateDDL)
		record = func(ids ...string) {
			for _, id := range ids {
				mysqltest.Exec(tb, dsn, `INSERT INTO received_messages (consumer_id, message_id, creation_time)
					VALUES ('inventory-service', ?, ROUND(UNIX_TIMESTAMP(CURTIME(4)) * 1000))`, id)
			}
		}
	} else {
		dsn = pgtest.NewDatabase(tb)
		pgtest.Exec(tb, dsn, pginbox.EventuateDDL)
		record = func(ids ...string) {
			for _, id := range ids {
				pgtest.Exec(tb, dsn, `INSERT INTO received_messages (consumer_id, message_id, creation_time)
					VALUES ('inventory-service', $1, (ROUND(EXTRACT(EPOCH FROM CLOCK_TIMESTAMP()) * 1000)))`, id)
			}
		}
	}
	cfg, err := configs.Parse([]byte(`
auth: {mode: none}
store: {dsn: "postgres://x@127.0.0.1/y"}
consumers: [{name: inventory-service, inbox: {dsn: "`+dsn+`", format: eventuate}}]`), func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	in, err = open(ctxT(tb), "inventory-service", *cfg.Consumers[0].Inbox)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(in.Close)
	return in, record
}

// A guarded Kafka replay whose consumer's inbox is Eventuate's received_messages in MariaDB skips
// what it processed, at plan time and again at the run; a row there is processed (Eventuate has
// no in-progress state), so nothing is skipped as in progress.
func TestKafkaReplayWithAnEventuateInboxSkipsWhatItProcessed(t *testing.T) {
	w := newWorld(t)
	in, record := eventuateInbox(t, true)
	w.inbox = in
	for _, id := range []string{"m-1", "m-2", "m-3", "m-4", "m-5"} {
		w.deadLetter(t, 0, id, "k-"+id[2:], "com.acme.StockException")
	}
	record("m-2", "m-3")
	e := w.engine(t, "a")
	ctx := ctxT(t)
	plan, err := e.Plan(ctx, "alice", kafkaSource(0, 0, 99), replay.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Total != 5 || plan.Counts[replay.Publish] != 3 || plan.Counts[replay.SkipProcessed] != 2 || plan.Counts[replay.SkipInProgress] != 0 {
		t.Fatalf("plan counts %v (total %d)", plan.Counts, plan.Total)
	}
	record("m-4") // the consumer takes m-4 between the plan and the run
	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "alice"}, Reason: "fixed stock bug", RatePerSecond: 1000})
	if job.Status != replay.JobDone || job.Published != 2 || job.Skipped != 3 || job.Failed != 0 {
		t.Fatalf("job %+v", job)
	}
	got := w.originals(t)
	if len(got) != 2 {
		t.Fatalf("%d records on the original topic, want 2 (m-1, m-5)", len(got))
	}
	for _, r := range got {
		if id, _ := header(r, "messageId"); id != "m-1" && id != "m-5" {
			t.Errorf("%s was republished", id)
		}
	}
}

// The same with RabbitMQ and an Eventuate inbox in PostgreSQL: the processed messages stay in the
// DLQ, the rest reach the work queue once.
func TestRabbitReplayWithAnEventuateInboxSkipsWhatItProcessed(t *testing.T) {
	w := newRabbitWorld(t)
	in, record := eventuateInbox(t, false)
	w.inbox = in
	w.deadLetter(t, 6)
	record("m-0", "m-3")
	e := w.engine(t)
	plan := w.planQueue(t, e, 100, replay.Filter{})
	if plan.Total != 6 || plan.Counts[replay.Publish] != 4 || plan.Counts[replay.SkipProcessed] != 2 {
		t.Fatalf("plan %v", plan.Counts)
	}
	record("m-5") // processed after the plan: skipped at the run
	work(t, e)
	job := runJob(t, e, replay.StartRequest{PlanID: plan.ID, Actor: access.Actor{Name: "ops"}, RatePerSecond: 1000})
	if job.Status != replay.JobDone || job.Published != 3 || job.Skipped != 3 || job.Failed != 0 {
		t.Fatalf("job %+v", job)
	}
	w.waitDepth(t, "orders.work", 3)
	w.waitDepth(t, "orders.dlq", 3)
	if got := ids(w.drain(t, "orders.work")); strings.Join(got, ",") != "m-1,m-2,m-4" {
		t.Fatalf("replayed %v, want m-1, m-2, m-4", got)
	}
	if left := ids(w.drain(t, "orders.dlq")); strings.Join(left, ",") != "m-0,m-3,m-5" {
		t.Fatalf("kept %v, want m-0, m-3, m-5", left)
	}
}
