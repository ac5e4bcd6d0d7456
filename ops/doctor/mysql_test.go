package doctor_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
	"github.com/redrive/redrive/ops/inbox/mysqlinbox"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
	"github.com/redrive/redrive/ops/pgtest"
)

// mysqlAdapters opens the outboxes and inboxes of a config in MySQL/MariaDB, as the console does
// for a mysql:// DSN.
var mysqlAdapters = withSystems(doctor.Adapters{OpenOutbox: mysqloutbox.Open, OpenInbox: mysqlinbox.Open})

// newMySQLUser creates an account 'name'@'127.0.0.1' (server-wide), dropped at cleanup.
func newMySQLUser(t *testing.T) (name, password string) {
	t.Helper()
	name, password = "doctor_"+suffix(), "pw_"+suffix()
	admin := mysqltest.AdminDSN(t)
	mysqltest.Exec(t, admin, `CREATE USER '`+name+`'@'127.0.0.1' IDENTIFIED BY '`+password+`'`)
	t.Cleanup(func() { mysqltest.Exec(t, admin, `DROP USER IF EXISTS '`+name+`'@'127.0.0.1'`) })
	return name, password
}

// TestMySQLRights: in MariaDB, an account without UPDATE on locked_until, without SELECT on the
// inbox and an outbox without its (status, available_at) index are each reported with the
// statement that fixes them, in MySQL's syntax; once the printed statements are run, the same
// account passes every check of its tables.
func TestMySQLRights(t *testing.T) {
	user, pw := newMySQLUser(t)
	svc := mysqltest.NewDatabase(t)
	u, err := url.Parse(svc)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	mysqltest.Exec(t, svc, mysqloutbox.SeedDDL)
	mysqltest.Exec(t, svc, `DROP INDEX idx_outbox_ready ON outbox_event`)
	mysqltest.Exec(t, svc, mysqlinbox.SeedDDL)
	grantee := "'" + user + "'@'127.0.0.1'"
	// INSERT alone: MySQL shows the account the inbox table (it hides one the account has no
	// right on) but not its rows.
	mysqltest.Exec(t, svc, `GRANT SELECT ON `+dbName+`.outbox_event TO `+grantee)
	mysqltest.Exec(t, svc, `GRANT UPDATE (status, attempts, available_at) ON `+dbName+`.outbox_event TO `+grantee)
	mysqltest.Exec(t, svc, `GRANT INSERT ON `+dbName+`.inbox_message TO `+grantee)

	cfg := baseConfig(t, pgtest.NewDatabase(t))
	cfg.Outboxes = []configs.Outbox{{Name: "orders", DSN: configs.Secret(as(t, svc, user, pw)), Table: "outbox_event"}}
	cfg.Consumers = []configs.Consumer{{Name: "billing", Inbox: &configs.Inbox{DSN: configs.Secret(as(t, svc, user, pw)), Table: "inbox_message"}}}
	cfg, _ = configsRoundTrip(t, cfg)

	rep := doctor.New(cfg, mysqlAdapters).Run(context.Background())
	t.Log("\n" + text(rep))
	if rep.Passed() {
		t.Fatal("an account with missing rights passed")
	}
	expect(t, rep, "outbox/orders", "connect", doctor.OK)
	expect(t, rep, "outbox/orders", "table", doctor.OK)
	expect(t, rep, "outbox/orders", "columns", doctor.OK)
	expect(t, rep, "outbox/orders", "SELECT", doctor.OK)
	up := expect(t, rep, "outbox/orders", "UPDATE", doctor.Failed, "GRANT UPDATE (locked_until) ON "+dbName+".outbox_event TO "+grantee+";")
	if strings.Contains(up.Fix, "attempts") {
		t.Errorf("the fix grants a column the account already may update: %s", up.Fix)
	}
	expect(t, rep, "outbox/orders", "index (status, available_at)", doctor.Warning,
		"CREATE INDEX idx_outbox_event_ready ON "+dbName+".outbox_event (status, available_at) ALGORITHM=INPLACE LOCK=NONE;")
	expect(t, rep, "inbox/billing", "primary key", doctor.OK)
	expect(t, rep, "inbox/billing", "SELECT", doctor.Failed, "GRANT SELECT ON "+dbName+".inbox_message TO "+grantee+";")

	// Run what the doctor printed, as the DBA would, and ask again.
	for _, c := range rep.Checks {
		if c.Status == doctor.OK || c.Fix == "" || c.Target == "store" {
			continue
		}
		for _, stmt := range strings.Split(c.Fix, "\n") {
			mysqltest.Exec(t, svc, stmt)
		}
	}
	rep = doctor.New(cfg, mysqlAdapters).Run(context.Background())
	for _, c := range rep.Checks {
		if c.Target != "store" && c.Status != doctor.OK {
			t.Errorf("after running the fixes: %s %s %s: %s", c.Status, c.Target, c.Name, c.Detail)
		}
	}

	t.Run("MissingTableAndColumn", func(t *testing.T) {
		bad := *cfg
		bad.Outboxes = []configs.Outbox{cfg.Outboxes[0], cfg.Outboxes[0]}
		bad.Outboxes[0].Name, bad.Outboxes[0].Table = "gone", "no_such_table"
		bad.Outboxes[1].Name = "renamed"
		bad.Outboxes[1].Columns.LockedUntil = "lease_until"
		bad.Consumers = nil
		rep := doctor.New(&bad, mysqlAdapters).Run(context.Background())
		expect(t, rep, "outbox/gone", "table", doctor.Failed, "outboxes[0].table", "database.table")
		c := expect(t, rep, "outbox/renamed", "columns", doctor.Failed, "outboxes[1].columns")
		if !strings.Contains(c.Detail, "outboxes[1].columns.locked_until = lease_until") {
			t.Errorf("detail does not name the key: %s", c.Detail)
		}
	})
	t.Run("CannotConnect", func(t *testing.T) {
		bad := *cfg
		bad.Outboxes = []configs.Outbox{cfg.Outboxes[0]}
		bad.Outboxes[0].DSN = configs.Secret(as(t, svc, user, "wrong-password"))
		bad.Consumers = nil
		rep := doctor.New(&bad, mysqlAdapters).Run(context.Background())
		c := expect(t, rep, "outbox/orders", "connect", doctor.Failed, "outboxes[0].dsn", "'user'@'host'")
		if strings.Contains(c.Detail, "wrong-password") {
			t.Errorf("the detail shows the password: %s", c.Detail)
		}
	})
}
