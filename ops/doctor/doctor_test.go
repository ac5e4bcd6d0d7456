package doctor_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
)

// pgAdapters opens the outboxes and inboxes of a config in PostgreSQL, as the console does for a
// postgres:// DSN.
var pgAdapters = withSystems(doctor.Adapters{OpenOutbox: pgoutbox.Open, OpenInbox: pginbox.Open})

func suffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newRole creates a login role (cluster-wide) dropped at cleanup, after the test's databases.
func newRole(t *testing.T) (name, password string) {
	t.Helper()
	name, password = "doctor_"+suffix(), "pw_"+suffix()
	admin := pgtest.AdminDSN(t)
	pgtest.Exec(t, admin, `CREATE ROLE `+name+` LOGIN PASSWORD '`+password+`'`)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, admin); err == nil {
			_, _ = c.Exec(ctx, `DROP ROLE IF EXISTS `+name)
			c.Close(ctx)
		}
	})
	return name, password
}

func as(t *testing.T, dsn, user, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

func baseConfig(t *testing.T, storeDSN string) *configs.Config {
	t.Helper()
	raw := "auth: {mode: none}\nstore: {dsn: '" + storeDSN + "'}\n"
	cfg, err := configs.Parse([]byte(raw), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func find(t *testing.T, rep doctor.Report, target, name string) doctor.Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Target == target && c.Name == name {
			return c
		}
	}
	var buf bytes.Buffer
	_ = doctor.WriteText(&buf, rep)
	t.Fatalf("no check %s %q in the report:\n%s", target, name, buf.String())
	return doctor.Check{}
}

func expect(t *testing.T, rep doctor.Report, target, name string, status doctor.Status, fixHas ...string) doctor.Check {
	t.Helper()
	c := find(t, rep, target, name)
	if c.Status != status {
		t.Errorf("%s %s: status %s, want %s (%s; fix %q)", target, name, c.Status, status, c.Detail, c.Fix)
	}
	for _, s := range fixHas {
		if !strings.Contains(c.Fix, s) {
			t.Errorf("%s %s: fix %q does not contain %q", target, name, c.Fix, s)
		}
	}
	return c
}

func only(rep doctor.Report, prefix string) doctor.Report {
	out := doctor.Report{}
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Target, prefix) {
			out.Checks = append(out.Checks, c)
			switch c.Status {
			case doctor.OK:
				out.OK++
			case doctor.Warning:
				out.Warnings++
			default:
				out.Failed++
			}
		}
	}
	return out
}

func text(rep doctor.Report) string {
	var buf bytes.Buffer
	_ = doctor.WriteText(&buf, rep)
	return buf.String()
}

// TestPostgresRights: a role without UPDATE on locked_until, without SELECT on the inbox and an
// outbox without its (status, available_at) index are each reported with the statement that fixes
// them; once the printed statements are run, the same role passes every check.
func TestPostgresRights(t *testing.T) {
	user, pw := newRole(t)
	svc := pgtest.NewDatabase(t)
	storeDB := pgtest.NewDatabase(t)
	pgtest.Exec(t, svc, pgoutbox.SeedDDL)
	pgtest.Exec(t, svc, `DROP INDEX idx_outbox_ready`)
	pgtest.Exec(t, svc, pginbox.SeedDDL)
	pgtest.Exec(t, svc, `GRANT SELECT ON outbox_event TO `+user+`;
		GRANT UPDATE (status, attempts, available_at) ON outbox_event TO `+user)

	cfg := baseConfig(t, as(t, storeDB, user, pw))
	cfg.Outboxes = []configs.Outbox{{Name: "orders", DSN: configs.Secret(as(t, svc, user, pw)), Table: "outbox_event"}}
	cfg.Consumers = []configs.Consumer{{Name: "billing", Inbox: &configs.Inbox{DSN: configs.Secret(as(t, svc, user, pw)), Table: "inbox_message"}}}
	raw, _ := configsRoundTrip(t, cfg)
	cfg = raw

	rep := doctor.New(cfg, pgAdapters).Run(context.Background())
	t.Log("\n" + text(rep))
	if rep.Passed() {
		t.Fatal("a role with missing rights passed")
	}
	expect(t, rep, "store", "connect", doctor.OK)
	expect(t, rep, "store", "migration rights", doctor.Failed, "GRANT CREATE ON DATABASE")
	expect(t, rep, "outbox/orders", "table", doctor.OK)
	expect(t, rep, "outbox/orders", "columns", doctor.OK)
	expect(t, rep, "outbox/orders", "SELECT", doctor.OK)
	up := expect(t, rep, "outbox/orders", "UPDATE", doctor.Failed, "GRANT UPDATE (locked_until) ON public.outbox_event TO "+user+";")
	if strings.Contains(up.Fix, "attempts") {
		t.Errorf("the fix grants a column the role already may update: %s", up.Fix)
	}
	expect(t, rep, "outbox/orders", "index (status, available_at)", doctor.Warning,
		"CREATE INDEX CONCURRENTLY idx_outbox_event_ready ON public.outbox_event (status, available_at);")
	expect(t, rep, "inbox/billing", "primary key", doctor.OK)
	expect(t, rep, "inbox/billing", "SELECT", doctor.Failed, "GRANT SELECT ON public.inbox_message TO "+user+";")

	// Run what the doctor printed, as the DBA would, and ask again.
	for _, c := range rep.Checks {
		if c.Status == doctor.OK || c.Fix == "" {
			continue
		}
		for _, stmt := range strings.Split(c.Fix, "\n") {
			dsn := svc
			if c.Target == "store" {
				dsn = storeDB
			}
			pgtest.Exec(t, dsn, stmt)
		}
	}
	rep = doctor.New(cfg, pgAdapters).Run(context.Background())
	if rep.Failed+rep.Warnings != 0 {
		t.Fatalf("after running the fixes:\n%s", text(rep))
	}

	t.Run("MissingTableAndColumn", func(t *testing.T) {
		bad := *cfg
		bad.Outboxes = []configs.Outbox{cfg.Outboxes[0], cfg.Outboxes[0]}
		bad.Outboxes[0].Name, bad.Outboxes[0].Table = "gone", "no_such_table"
		bad.Outboxes[1].Name = "renamed"
		bad.Outboxes[1].Columns.LockedUntil = "lease_until"
		bad.Consumers = nil
		rep := doctor.New(&bad, pgAdapters).Run(context.Background())
		expect(t, rep, "outbox/gone", "table", doctor.Failed, "outboxes[0].table")
		c := expect(t, rep, "outbox/renamed", "columns", doctor.Failed, "outboxes[1].columns")
		if !strings.Contains(c.Detail, "outboxes[1].columns.locked_until = lease_until") {
			t.Errorf("detail does not name the key: %s", c.Detail)
		}
	})
}

// configsRoundTrip applies the config defaults to a Config built in code.
func configsRoundTrip(t *testing.T, cfg *configs.Config) (*configs.Config, error) {
	t.Helper()
	var b strings.Builder
	b.WriteString("auth: {mode: none}\nstore: {dsn: '" + string(cfg.Store.DSN) + "'}\n")
	if len(cfg.Outboxes) > 0 {
		b.WriteString("outboxes:\n")
		for _, o := range cfg.Outboxes {
			b.WriteString("  - {name: " + o.Name + ", dsn: '" + string(o.DSN) + "', table: " + o.Table + "}\n")
		}
	}
	if len(cfg.Consumers) > 0 {
		b.WriteString("consumers:\n")
		for _, c := range cfg.Consumers {
			b.WriteString("  - {name: " + c.Name + ", inbox: {dsn: '" + string(c.Inbox.DSN) + "', table: " + c.Inbox.Table + "}}\n")
		}
	}
	out, err := configs.Parse([]byte(b.String()), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return out, nil
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// rabbitTopology declares orders (direct) → queue orders, which dead-letters through orders.dlx
// (fanout) into orders.dlq.
func rabbitTopology(t *testing.T, amqpURL string) {
	t.Helper()
	_, ch := rabbittest.Channel(t, amqpURL)
	rabbittest.Topology{TB: t, Ch: ch}.Orders("orders", "orders")
}

// TestRabbitRights: a user with only the management tag and no write permission on the original
// exchange gets the set_user_tags and set_permissions fixes; an unreachable broker is reported as
// such; the test's administrator passes every check.
func TestRabbitRights(t *testing.T) {
	vhost, amqpURL, mgmt := rabbittest.NewVhost(t)
	rabbitTopology(t, amqpURL)
	storeDB := pgtest.NewDatabase(t)

	user, pw := "doctor_"+suffix(), "pw_"+suffix()
	if _, err := mgmt.PutUser(user, rabbithole.UserSettings{Password: pw, Tags: rabbithole.UserTags{"management"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = mgmt.DeleteUser(user) })
	if _, err := mgmt.UpdatePermissionsIn(vhost, user, rabbithole.Permissions{Configure: "", Write: "^$", Read: ".*"}); err != nil {
		t.Fatal(err)
	}

	full := rabbittest.Config(t, vhost)
	full.Name = "admin"
	limited := rabbittest.Config(t, vhost)
	limited.Name = "limited"
	u, _ := url.Parse(amqpURL)
	u.User = url.UserPassword(user, pw)
	limited.URL, limited.ManagementUser, limited.ManagementPassword = configs.Secret(u.String()), user, configs.Secret(pw)
	down := rabbittest.Config(t, vhost)
	down.Name = "down"
	down.URL = configs.Secret("amqp://guest:guest@" + freeAddr(t) + "/")
	down.ManagementURL = "http://" + freeAddr(t)

	cfg := baseConfig(t, storeDB)
	cfg.RabbitMQ = []configs.RabbitMQBroker{full, limited, down}
	rep := doctor.New(cfg, pgAdapters).Run(context.Background())
	t.Log("\n" + text(rep))

	if a := only(rep, "rabbitmq/admin"); a.Failed+a.Warnings != 0 || a.OK < 4 {
		t.Errorf("the administrator should pass every check:\n%s", text(a))
	}
	expect(t, rep, "rabbitmq/admin", "read "+vhost+"/orders.dlq", doctor.OK)
	expect(t, rep, "rabbitmq/admin", "write "+vhost+"/orders", doctor.OK)

	expect(t, rep, "rabbitmq/limited", "amqp login "+vhost, doctor.OK)
	expect(t, rep, "rabbitmq/limited", "management API", doctor.Failed, "rabbitmqctl set_user_tags "+user+" management monitoring")
	expect(t, rep, "rabbitmq/limited", "read "+vhost+"/orders.dlq", doctor.Warning, "rabbitmqctl list_user_permissions "+user)
	expect(t, rep, "rabbitmq/limited", "write "+vhost+"/orders", doctor.Failed, "rabbitmqctl set_permissions -p '"+vhost+"' "+user, `^orders$`)

	expect(t, rep, "rabbitmq/down", "amqp login "+vhost, doctor.Failed, "rabbitmq[2].url")
	expect(t, rep, "rabbitmq/down", "management API", doctor.Failed, "rabbitmq[2].management_url")

	// The write probe left nothing behind: no message reached the queue.
	q, err := mgmt.GetQueue(vhost, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if q.Messages != 0 {
		t.Errorf("orders holds %d messages after the doctor", q.Messages)
	}

	t.Run("PermissionsReadable", func(t *testing.T) {
		// The same user's permissions read by an administrator: the write pattern is named.
		mixed := limited
		mixed.ManagementUser, mixed.ManagementPassword = full.ManagementUser, full.ManagementPassword
		c := baseConfig(t, storeDB)
		c.RabbitMQ = []configs.RabbitMQBroker{mixed}
		rep := doctor.New(c, pgAdapters).Run(context.Background())
		expect(t, rep, "rabbitmq/limited", "read "+vhost+"/orders.dlq", doctor.OK)
		expect(t, rep, "rabbitmq/limited", "write "+vhost+"/orders", doctor.Failed,
			"rabbitmqctl set_permissions -p '"+vhost+"' "+user+" '' '^orders$' '.*'")
	})
}

// TestKafkaRights: against kfake with ACLs, a principal that may read the dead-letter topic but
// not write the original topic gets the kafka-acls fix; without ACLs every check passes; a
// cluster that reports no authorized operations and does not answer DescribeACLs is a warning;
// an unreachable cluster fails.
func TestKafkaRights(t *testing.T) {
	storeDB := pgtest.NewDatabase(t)
	topics := []string{"orders", "orders.DLT"}

	open := kfaketest.Cluster(t, kfake.SeedTopics(1, topics...))

	acl := func(res kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: res, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	secured := kfaketest.Cluster(t, kfake.SeedTopics(1, topics...), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "admin", "admin-pw"),
		kfake.User("PLAIN", "redrive", "pw",
			acl(kmsg.ACLResourceTypeTopic, "orders.DLT", kmsg.ACLOperationRead),
			acl(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLOperationDescribe),
			acl(kmsg.ACLResourceTypeGroup, "*", kmsg.ACLOperationDescribe)))

	old := kversion.V2_0_0() // Metadata v6: no authorized operations
	old.SetMaxKeyVersion(29, -1)
	legacy := kfaketest.Cluster(t, kfake.SeedTopics(1, topics...), kfake.MaxVersions(old))

	cfg := baseConfig(t, storeDB)
	cfg.Kafka = []configs.KafkaCluster{
		{Name: "open", Brokers: open.ListenAddrs()},
		{Name: "secured", Brokers: secured.ListenAddrs(), SASL: &configs.SASL{Mechanism: "PLAIN", Username: "redrive", Password: "pw"}},
		{Name: "legacy", Brokers: legacy.ListenAddrs()},
		{Name: "down", Brokers: []string{freeAddr(t)}, RequestTimeout: configs.Duration(2 * time.Second)},
	}
	for i := range cfg.Kafka {
		k := &cfg.Kafka[i]
		k.DeadLetterTopics = []string{"*.DLT"}
		if k.RequestTimeout == 0 {
			k.RequestTimeout = configs.Duration(5 * time.Second)
		}
	}
	rep := doctor.New(cfg, pgAdapters).Run(context.Background())
	t.Log("\n" + text(rep))

	if o := only(rep, "kafka/open"); o.Failed+o.Warnings != 0 {
		t.Errorf("a cluster without ACLs should pass:\n%s", text(o))
	}
	expect(t, rep, "kafka/open", "read orders.DLT", doctor.OK)
	expect(t, rep, "kafka/open", "produce orders", doctor.OK)

	expect(t, rep, "kafka/secured", "metadata", doctor.OK)
	expect(t, rep, "kafka/secured", "read orders.DLT", doctor.OK)
	expect(t, rep, "kafka/secured", "produce orders", doctor.Failed,
		"kafka-acls.sh --bootstrap-server "+secured.ListenAddrs()[0]+" --add --allow-principal User:redrive --operation Write --topic orders")

	c := expect(t, rep, "kafka/legacy", "produce orders", doctor.Warning)
	if c.Detail != "not checked: the cluster does not answer DescribeACLs" {
		t.Errorf("legacy detail: %q", c.Detail)
	}
	expect(t, rep, "kafka/down", "metadata", doctor.Failed, "kafka[3].brokers")
}
