// Package mysqlpool is the MySQL/MariaDB counterpart of ops/pgpool for the services' tables (an
// outbox, an inbox): it reads a mysql:// URL into github.com/go-sql-driver/mysql's configuration,
// and gives a database/sql pool whose calls wait a bounded time for a connection. database/sql,
// like pgxpool, has none: a call on a pool whose connections are all in use waits as long as its
// context allows. Pool takes the connection first, under the bound (ops.BusyError when it ran out,
// naming the pool and the key that raises it), then runs the statements on the caller's context,
// so that a long read is never cut short by the acquire bound.
//
// Every connection runs in UTC (time_zone '+00:00') unless InZone says another zone, the one the
// services write their DATETIME columns in, so that NOW(6) is the same clock (zone.go: how a
// session follows a zone's daylight-saving changes); DATETIME and TIMESTAMP values are read as
// time.Time in that zone (parseTime=true, loc). Every connection runs with autocommit on, whatever
// the server's default: Do's reads are each their own transaction.
package mysqlpool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/redrive/redrive/ops"
)

// DefaultAcquireTimeout is the wait bound when Options.AcquireTimeout is zero.
const DefaultAcquireTimeout = 5 * time.Second

// DefaultMaxConns is the pool size when Options.MaxConns is zero.
const DefaultMaxConns = 4

// Options say how big a pool is, how long a call waits for one of its connections, and how to
// name it when it is busy (as pgpool.Options).
type Options struct {
	// Name is what the pool serves, as the operator knows it: `outbox "orders"`. Required.
	Name string
	// Key is the configuration key that raises MaxConns, named in the busy error. Required.
	Key string
	// MaxConns is the pool size; zero means DefaultMaxConns.
	MaxConns int
	// AcquireTimeout bounds the wait for a free connection; zero means DefaultAcquireTimeout.
	AcquireTimeout time.Duration
}

// ParseURL reads mysql://user:password@host:port/database?params into the driver's
// configuration: the port defaults to 3306, user and password are percent-decoded, params are
// the driver's own (tls, timeout, readTimeout, charset, collation, …) or the session's system
// variables, as in its DSN format. Whatever the URL says, times are read as time.Time in UTC
// (parseTime, loc) and the session's time_zone is '+00:00' (InZone changes both), and autocommit
// is on: a server that starts sessions with it off (autocommit=0 in its configuration,
// init_connect='SET autocommit=0') or a URL's autocommit=0 would make every read of Do open a
// REPEATABLE READ transaction that nothing ends, on a connection the pool keeps for an hour — its
// reads frozen on one snapshot. The error names no part of the URL (it may hold a password).
func ParseURL(raw string) (*mysql.Config, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "mysql" || u.Host == "" || u.Opaque != "" {
		return nil, errors.New("must be a mysql://user:password@host:port/database URL")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, errors.New("a mysql:// URL names its database: mysql://user:password@host:port/database")
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "3306"
	}
	cfg, err := mysql.ParseDSN("tcp(" + net.JoinHostPort(host, port) + ")/" + url.PathEscape(db) + "?" + u.Query().Encode())
	if err != nil {
		return nil, errors.New("a mysql:// URL's parameters must be the driver's (tls, timeout, charset, …) or system variables")
	}
	cfg.DBName = db
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Params["autocommit"] = "1" // set with time_zone, after the server's init_connect
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second // a dial that nothing answers ends, as PostgreSQL's connect_timeout
	}
	if cfg.ConnectionAttributes == "" {
		cfg.ConnectionAttributes = "program_name:redrive-console"
	}
	// One round trip a statement instead of prepare, execute, close; the driver escapes for the
	// connection's character set.
	cfg.InterpolateParams = true
	return cfg, nil
}

// Pool is a database/sql pool of one MySQL or MariaDB database whose calls wait a bounded time for
// a connection.
type Pool struct {
	db   *sql.DB
	opts Options
}

// New builds the pool. Like sql.Open it does not connect: a database that is down makes calls
// fail (ops.ErrUnavailable), and they succeed once it is back.
func New(cfg *mysql.Config, o Options) (*Pool, error) {
	if o.Name == "" || o.Key == "" {
		return nil, errors.New("mysqlpool: Options.Name and Options.Key are required")
	}
	if o.MaxConns < 0 || o.MaxConns > 10_000 {
		return nil, fmt.Errorf("mysqlpool: %s: MaxConns %d out of range", o.Key, o.MaxConns)
	}
	if o.AcquireTimeout < 0 {
		return nil, fmt.Errorf("mysqlpool: %s: negative AcquireTimeout", o.Key)
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.AcquireTimeout == 0 {
		o.AcquireTimeout = DefaultAcquireTimeout
	}
	conn, err := connector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysqlpool: %s: %w", o.Name, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(o.MaxConns)
	db.SetMaxIdleConns(o.MaxConns)
	// Under MySQL's wait_timeout (8 h) and the proxies in front of it, which drop idle sessions.
	db.SetConnMaxIdleTime(5 * time.Minute)
	db.SetConnMaxLifetime(time.Hour)
	return &Pool{db: db, opts: o}, nil
}

// Options returns the pool's effective options.
func (p *Pool) Options() Options { return p.opts }

// Close closes every connection.
func (p *Pool) Close() { _ = p.db.Close() }

var errWaitBound = errors.New("mysqlpool: acquire wait bound reached")

// conn takes a connection, waiting at most the bound.
func (p *Pool) conn(ctx context.Context) (*sql.Conn, error) {
	start := time.Now()
	actx, cancel := context.WithTimeoutCause(ctx, p.opts.AcquireTimeout, errWaitBound)
	defer cancel()
	c, err := p.db.Conn(actx)
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	ours := context.Cause(actx) == errWaitBound && ctx.Err() == nil
	s := p.db.Stats()
	busy := &ops.BusyError{Name: p.opts.Name, Key: p.opts.Key, MaxConns: p.opts.MaxConns, InUse: s.InUse,
		Waited: time.Since(start), CallerDeadline: !ours}
	if ours {
		busy.Waited = p.opts.AcquireTimeout // the bound, not a scheduling delay later
	}
	busy.Full = busy.InUse >= busy.MaxConns
	if !ours && !busy.Full {
		return nil, err // the caller's deadline, not a crowded pool: its own error says it best
	}
	return nil, busy
}

// Do runs f on one connection of the pool, taken within the bound, on ctx. When the connection
// turns out dead before f's statement reached the server (driver.ErrBadConn: the database ended
// the session while it sat in the pool), f runs once more on another; f must be safe to repeat
// (a read).
func (p *Pool) Do(ctx context.Context, f func(c *sql.Conn) error) error {
	err := p.do(ctx, f)
	if errors.Is(err, driver.ErrBadConn) && ctx.Err() == nil {
		err = p.do(ctx, f)
	}
	return err
}

func (p *Pool) do(ctx context.Context, f func(c *sql.Conn) error) error {
	c, err := p.conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
}

// Tx runs f in a READ COMMITTED transaction on one connection of the pool and commits when f
// returns nil; an error of f rolls it back and is returned as it is. READ COMMITTED: a locking
// read takes the rows it returns and no gap locks, so a repair never blocks a relay inserting
// events. A connection found dead at BEGIN is replaced once; after that nothing is repeated.
func (p *Pool) Tx(ctx context.Context, f func(tx *sql.Tx) error) error {
	c, tx, err := p.begin(ctx)
	if errors.Is(err, driver.ErrBadConn) && ctx.Err() == nil {
		c, tx, err = p.begin(ctx)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (p *Pool) begin(ctx context.Context) (*sql.Conn, *sql.Tx, error) {
	c, err := p.conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	tx, err := c.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, tx, nil
}

// LostSession reports whether err is the session going away rather than the statement failing:
// the connection was dead or broke (driver.ErrBadConn, mysql.ErrInvalidConn, a network error),
// the server is shutting down (1053) or ended the session (1927: killed; client errors 2006 and
// 2013: gone away, lost). A pool that is full (ops.BusyError) or a cancelled call is not; neither
// is a database that cannot be reached (no session to lose: a second try waits as long).
func LostSession(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if busy := (*ops.BusyError)(nil); errors.As(err, &busy) {
		return false
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1053, 1927, 2006, 2013:
			return true
		}
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.As(err, &op)
}

// ServerError returns the server's error in err's chain: the statement reached MySQL and was
// refused (a missing table, a missing right). nil for a connection or network failure.
func ServerError(err error) *mysql.MySQLError {
	var me *mysql.MySQLError
	if errors.As(err, &me) && !LostSession(err) {
		return me
	}
	return nil
}

// IsNoRows reports an empty single-row read.
func IsNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
