package devstack

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/redrive/redrive/ops/mysqlpool"
)

// mariadbOpen opens a mysql:// URL as the console reads it.
func mariadbOpen(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	cfg, err := mysqlpool.ParseURL(dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestMariaDBStartKillRestart(t *testing.T) {
	skipWithoutServices(t, "/usr/sbin/mariadbd")
	t.Parallel()
	ctx := context.Background()

	start := time.Now()
	m, err := StartMariaDB(ctx, MariaDBOptions{Dir: filepath.Join(t.TempDir(), "mariadb")})
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, m)
	t.Logf("mariadb ready on port %d in %s", m.Port(), time.Since(start))
	port := m.Port()
	db := mariadbOpen(t, m.DSN("mysql"))
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		t.Fatalf("as %s over TCP: %v", MariaDBUser, err)
	}
	t.Logf("version %s", version)
	for _, stmt := range []string{"CREATE DATABASE kept", "CREATE TABLE kept.t (v INT) ENGINE=InnoDB", "INSERT INTO kept.t VALUES (42)",
		// The account may create accounts and grant rights, as the doctor's tests do.
		"CREATE USER 'someone'@'127.0.0.1' IDENTIFIED BY 'pw'", "GRANT SELECT ON kept.t TO 'someone'@'127.0.0.1'"} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	// Crash it, as a test of a console whose database goes away would.
	if err := m.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Running() {
		t.Fatal("Running() after Kill")
	}

	if err := db.PingContext(ctx); err == nil {
		t.Fatal("ping succeeded after Kill")
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := mariadbOpen(t, m.DSN("kept")).QueryRowContext(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: v=%d err=%v", v, err)
	}

	// A graceful stop and a second StartMariaDB on the same dir, as `devstack down` and `up` do.
	other, err := OpenMariaDB(m.Dir())
	if err != nil || other.Port() != port {
		t.Fatalf("OpenMariaDB: port %v, %v; want %d", other, err, port)
	}
	if err := other.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(ctx); err != nil { // already stopped: no-op
		t.Fatal(err)
	}
	again, err := StartMariaDB(ctx, MariaDBOptions{Dir: m.Dir()})
	if err != nil {
		t.Fatal(err)
	}
	if again.Port() != port {
		t.Errorf("port changed: %d → %d", port, again.Port())
	}
	if err := mariadbOpen(t, again.DSN("kept")).QueryRowContext(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after stop and start: v=%d err=%v", v, err)
	}
}
