package doctor_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
	"github.com/redrive/redrive/ops/inbox/mysqlinbox"
	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/pgtest"
)

// eventuateInbox is a config of one consumer whose inbox is Eventuate Tram's received_messages at
// dsn, parsed as a config file is.
func eventuateInbox(t *testing.T, storeDSN, dsn, columns string) *configs.Config {
	t.Helper()
	cfg, err := configs.Parse([]byte("auth: {mode: none}\nstore: {dsn: '"+storeDSN+"'}\n"+
		"consumers: [{name: orders, inbox: {dsn: '"+dsn+"', format: eventuate"+columns+"}}]\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestEventuateInboxRights: an account that may not read an Eventuate received_messages table is
// told the GRANT in its database's syntax (MariaDB's, PostgreSQL's); once it is run, the columns,
// the primary key (consumer_id, message_id) and SELECT pass, and the columns check says a row
// means processed. A creation_time that is not an integer, or a column that is not there, fails
// naming the key.
func TestEventuateInboxRights(t *testing.T) {
	t.Run("MariaDB", func(t *testing.T) {
		user, pw := newMySQLUser(t)
		svc := mysqltest.NewDatabase(t)
		u, err := url.Parse(svc)
		if err != nil {
			t.Fatal(err)
		}
		dbName := strings.TrimPrefix(u.Path, "/")
		mysqltest.Exec(t, svc, mysqlinbox.EventuateDDL)
		grantee := "'" + user + "'@'127.0.0.1'"
		mysqltest.Exec(t, svc, `GRANT INSERT ON `+dbName+`.received_messages TO `+grantee)
		ad := withSystems(doctor.Adapters{OpenInbox: mysqlinbox.OpenEventuate})
		cfg := eventuateInbox(t, pgtest.NewDatabase(t), as(t, svc, user, pw), "")

		rep := doctor.New(cfg, ad).Run(context.Background())
		t.Log("\n" + text(rep))
		expect(t, rep, "inbox/orders", "primary key", doctor.OK)
		sel := expect(t, rep, "inbox/orders", "SELECT", doctor.Failed, "GRANT SELECT ON "+dbName+".received_messages TO "+grantee+";")
		mysqltest.Exec(t, svc, strings.TrimSuffix(sel.Fix, ";"))
		rep = doctor.New(cfg, ad).Run(context.Background())
		for _, name := range []string{"connect", "table", "columns", "primary key", "SELECT"} {
			expect(t, rep, "inbox/orders", name, doctor.OK)
		}
		if c := find(t, rep, "inbox/orders", "columns"); !strings.Contains(c.Detail, "message_id, consumer_id, creation_time exist") ||
			!strings.Contains(c.Detail, "a row means processed") || !strings.Contains(c.Detail, "no in-progress state") {
			t.Errorf("columns: %s", c.Detail)
		}

		mysqltest.Exec(t, svc, `CREATE TABLE received_dt (consumer_id VARCHAR(255), message_id VARCHAR(255), created DATETIME(3),
			PRIMARY KEY (consumer_id, message_id)) DEFAULT CHARSET=utf8mb4`)
		mysqltest.Exec(t, svc, `GRANT SELECT ON `+dbName+`.received_dt TO `+grantee)
		bad := eventuateInbox(t, pgtest.NewDatabase(t), as(t, svc, user, pw), ", table: received_dt, columns: {creation_time: created}")
		rep = doctor.New(bad, ad).Run(context.Background())
		if c := expect(t, rep, "inbox/orders", "columns", doctor.Failed, "consumers[0].inbox.columns.creation_time"); !strings.Contains(c.Detail, "created is datetime(3), needs an integer") {
			t.Errorf("columns: %s", c.Detail)
		}
		gone := eventuateInbox(t, pgtest.NewDatabase(t), as(t, svc, user, pw), ", columns: {consumer_id: subscriber_id}")
		rep = doctor.New(gone, ad).Run(context.Background())
		if c := expect(t, rep, "inbox/orders", "columns", doctor.Failed); !strings.Contains(c.Detail, "consumers[0].inbox.columns.consumer_id = subscriber_id") {
			t.Errorf("columns: %s", c.Detail)
		}
	})

	t.Run("PostgreSQL", func(t *testing.T) {
		user, pw := newRole(t)
		svc := pgtest.NewDatabase(t)
		pgtest.Exec(t, svc, pginbox.EventuateDDL)
		ad := withSystems(doctor.Adapters{OpenInbox: pginbox.OpenEventuate})
		cfg := eventuateInbox(t, pgtest.NewDatabase(t), as(t, svc, user, pw), "")
		rep := doctor.New(cfg, ad).Run(context.Background())
		t.Log("\n" + text(rep))
		expect(t, rep, "inbox/orders", "columns", doctor.OK)
		expect(t, rep, "inbox/orders", "primary key", doctor.OK)
		sel := expect(t, rep, "inbox/orders", "SELECT", doctor.Failed, "GRANT SELECT ON public.received_messages TO "+user+";")
		pgtest.Exec(t, svc, sel.Fix)
		rep = doctor.New(cfg, ad).Run(context.Background())
		expect(t, rep, "inbox/orders", "SELECT", doctor.OK)
	})
}
