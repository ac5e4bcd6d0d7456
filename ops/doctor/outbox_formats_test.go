package doctor_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
	"github.com/redrive/redrive/ops/mysqltest"
	"github.com/redrive/redrive/ops/outbox/mysqloutbox"
	"github.com/redrive/redrive/ops/pgtest"
)

// TestModulithRegistryRights: console doctor checks a Spring Modulith registry in MariaDB by its
// own (upper-case) columns, asks only for SELECT (the console writes nothing to it) in MariaDB's
// syntax, and names a missing column by its format key.
func TestModulithRegistryRights(t *testing.T) {
	user, pw := newMySQLUser(t)
	svc := mysqltest.NewDatabase(t)
	u, err := url.Parse(svc)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	mysqltest.Exec(t, svc, `CREATE TABLE EVENT_PUBLICATION (ID VARCHAR(36) NOT NULL, LISTENER_ID VARCHAR(512) NOT NULL,
		EVENT_TYPE VARCHAR(512) NOT NULL, SERIALIZED_EVENT VARCHAR(4000) NOT NULL, PUBLICATION_DATE TIMESTAMP(6) NOT NULL,
		COMPLETION_DATE TIMESTAMP(6) DEFAULT NULL NULL, STATUS VARCHAR(20), COMPLETION_ATTEMPTS INT,
		LAST_RESUBMISSION_DATE TIMESTAMP(6) DEFAULT NULL NULL, PRIMARY KEY (ID))`)
	config := func(extra string) *configs.Config {
		t.Helper()
		cfg, err := configs.Parse([]byte("auth: {mode: none}\nstore: {dsn: '"+pgtest.NewDatabase(t)+"'}\n"+
			"outboxes: [{name: modulith, dsn: '"+as(t, svc, user, pw)+"', format: spring-modulith"+extra+"}]\n"), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	grantee := "'" + user + "'@'127.0.0.1'"
	mysqltest.Exec(t, svc, `GRANT INSERT ON `+dbName+`.EVENT_PUBLICATION TO `+grantee) // a right, but not to read
	ad := withSystems(doctor.Adapters{OpenOutbox: mysqloutbox.OpenRegistry})
	rep := doctor.New(config(""), ad).Run(context.Background())
	t.Log("\n" + text(rep))
	sel := expect(t, rep, "outbox/modulith", "SELECT", doctor.Failed, "GRANT SELECT ON "+dbName+".EVENT_PUBLICATION TO "+grantee+";")
	mysqltest.Exec(t, svc, strings.TrimSuffix(sel.Fix, ";"))
	rep = doctor.New(config(""), ad).Run(context.Background())
	t.Log("\n" + text(rep))
	for _, name := range []string{"connect", "table", "columns", "SELECT"} {
		expect(t, rep, "outbox/modulith", name, doctor.OK)
	}
	for _, c := range rep.Checks {
		if c.Target == "outbox/modulith" && (strings.HasPrefix(c.Name, "index") || c.Name == "UPDATE") {
			t.Errorf("a read-only registry checked for %s: %+v", c.Name, c)
		}
	}
	rep = doctor.New(config(", columns: {status: STATE}"), ad).Run(context.Background())
	if c := expect(t, rep, "outbox/modulith", "columns", doctor.Failed); !strings.Contains(c.Detail, "outboxes[0].columns.status = STATE") {
		t.Errorf("columns: %s", c.Detail)
	}
}
