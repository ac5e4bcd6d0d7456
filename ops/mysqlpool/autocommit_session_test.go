package mysqlpool_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/redrive/redrive/ops/mysqlpool"
	"github.com/redrive/redrive/ops/mysqltest"
)

// fresh checks that the pool's session runs with autocommit on and that each of its reads sees
// what was committed before it: with autocommit off, the first read opened a REPEATABLE READ
// transaction that nothing ended, on a connection the pool keeps for an hour, and every later read
// of the session saw that first snapshot.
func fresh(t *testing.T, p *mysqlpool.Pool, dsn string) {
	t.Helper()
	ctx := context.Background()
	read := func() (autocommit, rows int) {
		err := p.Do(ctx, func(c *sql.Conn) error {
			return c.QueryRowContext(ctx, `SELECT @@session.autocommit, (SELECT count(*) FROM ac)`).Scan(&autocommit, &rows)
		})
		if err != nil {
			t.Fatal(err)
		}
		return autocommit, rows
	}
	if ac, n := read(); ac != 1 || n != 0 {
		t.Errorf("first read: autocommit %d, %d rows; want 1, 0", ac, n)
	}
	mysqltest.Exec(t, dsn, `INSERT INTO ac VALUES (1)`) // committed by another session
	if ac, n := read(); ac != 1 || n != 1 {
		t.Errorf("read after a row was committed: autocommit %d, %d rows; want 1, 1", ac, n)
	}
}

// A URL's autocommit=0 (a session variable, as the URL's parameters may set) does not turn it off.
func TestAutocommitOffInURL(t *testing.T) {
	dsn := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, dsn, `CREATE TABLE ac (id INT PRIMARY KEY)`)
	fresh(t, openPool(t, dsn+"?autocommit=0", nil), dsn)
}

// A server that starts sessions with autocommit off: init_connect = 'SET autocommit=0' (the MySQL
// manual's own example of init_connect), here for the test's account only (init_connect is
// global; other tests' accounts keep the server's default), which, like the console's accounts,
// has no SUPER or CONNECTION ADMIN (init_connect does not run for those).
func TestAutocommitOffByServer(t *testing.T) {
	dsn := mysqltest.NewDatabase(t)
	mysqltest.Exec(t, dsn, `CREATE TABLE ac (id INT PRIMARY KEY)`)
	admin := mysqltest.AdminDSN(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	user, password := "ac_"+hex.EncodeToString(b), "pw_"+hex.EncodeToString(b)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	mysqltest.Exec(t, admin, `CREATE USER '`+user+`'@'127.0.0.1' IDENTIFIED BY '`+password+`'`)
	t.Cleanup(func() { mysqltest.Exec(t, admin, `DROP USER IF EXISTS '`+user+`'@'127.0.0.1'`) })
	mysqltest.Exec(t, admin, `GRANT ALL ON `+u.Path[1:]+`.* TO '`+user+`'@'127.0.0.1'`)
	prev := mysqltest.Value[string](t, admin, `SELECT @@global.init_connect`)
	mysqltest.Exec(t, admin, `SET GLOBAL init_connect = ?`,
		`SET autocommit = IF(SUBSTRING_INDEX(CURRENT_USER(), '@', 1) = '`+user+`', 0, @@global.autocommit)`)
	t.Cleanup(func() { mysqltest.Exec(t, admin, `SET GLOBAL init_connect = ?`, prev) })
	u.User = url.UserPassword(user, password)

	// The server's setting is in force: a session that does not set autocommit starts with it off.
	cfg, err := mysqlpool.ParseURL(u.String())
	if err != nil {
		t.Fatal(err)
	}
	delete(cfg.Params, "autocommit")
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var ac int
	if err := db.QueryRow(`SELECT @@session.autocommit`).Scan(&ac); err != nil || ac != 0 {
		t.Fatalf("the server's init_connect: a plain session's autocommit is %d (%v); want 0", ac, err)
	}

	fresh(t, openPool(t, u.String(), nil), dsn)
}
