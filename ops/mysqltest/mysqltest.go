// Package mysqltest gives each test its own database on the real MariaDB (or MySQL) that `make
// test` starts (REDRIVE_TEST_MYSQL_DSN, a mysql:// URL of an account that may create databases and
// users), as ops/pgtest does on PostgreSQL. Tests never share tables, so they run in parallel and
// leave nothing behind.
package mysqltest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/redrive/redrive/ops/mysqlpool"
	"github.com/redrive/redrive/ops/testenv"
	"github.com/redrive/redrive/ops/waittest"
)

// EnvDSN names the variable holding the admin URL of the test MariaDB.
const EnvDSN = "REDRIVE_TEST_MYSQL_DSN"

// AdminDSN returns the admin URL, failing the test (never skipping it) when it is missing.
func AdminDSN(tb testing.TB) string {
	tb.Helper()
	return testenv.Var(tb, EnvDSN, "MariaDB")
}

// Open opens dsn (a mysql:// URL, read as the console reads it) for a test's own statements, with
// several statements allowed in one Exec; it is closed when tb ends.
func Open(tb testing.TB, dsn string) *sql.DB {
	tb.Helper()
	cfg, err := mysqlpool.ParseURL(dsn)
	if err != nil {
		tb.Fatalf("mysqltest: %v", err)
	}
	cfg.MultiStatements = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		tb.Fatalf("mysqltest: %v", err)
	}
	db := sql.OpenDB(conn)
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// NewDatabase creates an empty database for this test, drops it at cleanup, and returns its URL.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := testenv.Name()
	root := adminDatabase(tb)
	db := Open(tb, root)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		tb.Fatalf("mysqltest: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db := Open(tb, root)
		_, _ = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
	})
	u := adminURL(tb)
	u.Path = "/" + name
	return u.String()
}

// adminURL is the admin URL, parsed.
func adminURL(tb testing.TB) *url.URL {
	tb.Helper()
	u, err := url.Parse(AdminDSN(tb))
	if err != nil {
		tb.Fatalf("mysqltest: parse %s: %v", EnvDSN, err)
	}
	return u
}

// adminDatabase is the admin URL naming a database (mysql when it names none), for statements of
// the whole server.
func adminDatabase(tb testing.TB) string {
	tb.Helper()
	u := adminURL(tb)
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mysql"
	}
	return u.String()
}

// Exec runs SQL statements on dsn, failing the test on error.
func Exec(tb testing.TB, dsn string, query string, args ...any) {
	tb.Helper()
	db := Open(tb, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := db.ExecContext(ctx, query, args...); err != nil {
		tb.Fatalf("mysqltest: exec %.80q: %v", query, err)
	}
}

// Value runs a query of one row and one column on dsn and returns its value, failing the test on
// error.
func Value[T any](tb testing.TB, dsn, query string, args ...any) T {
	tb.Helper()
	db := Open(tb, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var v T
	if err := db.QueryRowContext(ctx, query, args...).Scan(&v); err != nil {
		tb.Fatalf("mysqltest: query %.80q: %v", query, err)
	}
	return v
}

// Conn is one connection of the test's own to dsn (a relay holding a row lock, a session holding
// a table lock), closed when the test ends.
func Conn(tb testing.TB, dsn string) *sql.Conn {
	tb.Helper()
	c, err := Open(tb, dsn).Conn(context.Background())
	if err != nil {
		tb.Fatalf("mysqltest: connect: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// WaitLockWaiters waits until at least n sessions of dsn's database wait on a lock (a table or
// metadata lock, a row lock), asking the server's process list rather than sleeping.
func WaitLockWaiters(tb testing.TB, dsn string, n int) {
	tb.Helper()
	db := Open(tb, dsn)
	waittest.For(tb, 20*time.Second, fmt.Sprintf("%d sessions waiting on a lock", n), func() (int, bool) {
		var waiting int
		if err := db.QueryRow(`SELECT count(*) FROM information_schema.PROCESSLIST
			WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND (STATE LIKE '%lock%' OR STATE LIKE '%Lock%')`).Scan(&waiting); err != nil {
			tb.Fatalf("mysqltest: processlist: %v", err)
		}
		return waiting, waiting >= n
	})
}

// KillSessions ends every other session on dsn's database, as a restart or failover does, and
// says how many it ended.
func KillSessions(tb testing.TB, dsn string) int {
	tb.Helper()
	db := Open(tb, dsn)
	db.SetMaxOpenConns(1) // one session of its own, which it does not kill
	rows, err := db.Query(`SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()`)
	if err != nil {
		tb.Fatalf("mysqltest: processlist: %v", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	killed := 0
	for _, id := range ids {
		if _, err := db.Exec(fmt.Sprintf("KILL CONNECTION %d", id)); err == nil {
			killed++
		}
	}
	return killed
}
