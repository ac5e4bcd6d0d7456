package mysqlpool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// InZone makes cfg's sessions run in loc, for tables whose DATETIME columns were written in it
// (NOW() in a session of that zone): New's pool keeps each session's time_zone on loc's clock at
// every moment, so that NOW() compares with the writers' clock across daylight-saving changes, and
// reads DATETIME values as loc's wall clock and TIMESTAMP values as the instants they hold,
// whichever half of the year they fall in. Time parameters are written as loc's wall clock.
func InZone(cfg *mysql.Config, loc *time.Location) error {
	if loc == nil {
		return errors.New("mysqlpool: InZone: no location")
	}
	cfg.Loc = loc
	return nil
}

// How a session follows a zone other than UTC.
//
// A named time_zone ('Europe/Berlin') is right at every moment and for every date: the server
// applies the zone's rules to NOW() and to every TIMESTAMP it converts, as Go does with loc. It
// needs the server's time zone tables (mysql_tzinfo_to_sql, mariadb-tzinfo-to-sql), which many
// servers do not load: SET time_zone then fails (1298). zoneConnector tries the name first and, on
// 1298, uses for the pool's life the zone's offset ('+01:00'), which is right only until loc's next
// change. Such a connection (offsetConn) compares, before each statement, the offset its session
// runs at with loc's offset now and sets it again when they differ: a SET on the first statement
// after a change, a zone look-up otherwise.
//
// A fixed offset also converts TIMESTAMP values (UTC inside) at that one offset: a summer instant
// read in winter comes as its winter wall clock, which parsed as loc's wall clock — what a DATETIME
// must be parsed as — is an hour off. The driver parses every time value of a result with one
// location, whatever the column's type; so an offset connection has it parse them in UTC (the
// wall clock's fields, nothing normalised away) and offsetRows gives each column its zone by its
// type: TIMESTAMP the session's offset when the statement ran (exact: an offset has no gap and no
// repeated hour), DATETIME and DATE loc. Rewriting the adapters' SQL instead (UNIX_TIMESTAMP of
// each TIMESTAMP column) would need every query to know its columns' types; the result's
// metadata has them. A TIMESTAMP computed into a DATETIME in SQL (CAST, a UNION with a DATETIME)
// is the session's wall clock under a DATETIME's type and is read as loc's: the adapters select
// their TIMESTAMP columns as they are.
//
// In UTC (the default) the driver's connector is used as it is: the session's time_zone is
// '+00:00' from the URL (ParseURL), and there is nothing to follow.

// errUnknownTimeZone is MySQL's and MariaDB's ER_UNKNOWN_TIME_ZONE: a named zone without the
// server's time zone tables.
const errUnknownTimeZone = 1298

// zoneNameRE is an IANA zone name as SET time_zone may quote it (the configuration loaded it in
// Go; other names go straight to offsets).
var zoneNameRE = regexp.MustCompile(`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`)

// sessionZoneKey carries, in the context of the driver's Connect, the zone that the connector's
// BeforeConnect gives the session.
type sessionZoneKey struct{}

type sessionZone struct {
	timeZone string         // the session's time_zone, quoted
	loc      *time.Location // the driver's location for the connection's time values
}

// connector is the driver's connector of cfg; in a zone other than UTC (InZone), a zoneConnector.
func connector(cfg *mysql.Config) (driver.Connector, error) {
	if cfg.Loc == nil || cfg.Loc == time.UTC {
		return mysql.NewConnector(cfg)
	}
	cfg = cfg.Clone()
	err := cfg.Apply(mysql.BeforeConnect(func(ctx context.Context, c *mysql.Config) error {
		z, ok := ctx.Value(sessionZoneKey{}).(sessionZone)
		if !ok {
			return errors.New("mysqlpool: a connection opened without its zone")
		}
		if c.Params == nil {
			c.Params = map[string]string{}
		}
		c.Params["time_zone"], c.Loc = z.timeZone, z.loc
		return nil
	}))
	if err != nil {
		return nil, err
	}
	inner, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	z := &zoneConnector{inner: inner, loc: cfg.Loc}
	if name := cfg.Loc.String(); zoneNameRE.MatchString(name) {
		z.name = "'" + name + "'"
	} else {
		z.offsets.Store(true)
	}
	return z, nil
}

// zoneConnector opens sessions in loc: by its name while the server knows it, else at its offset
// (offsetConn).
type zoneConnector struct {
	inner   driver.Connector
	loc     *time.Location
	name    string      // loc's name, quoted for SET time_zone
	offsets atomic.Bool // the server refused the name (no zone tables): offsets from now on
}

// Driver is the driver's.
func (z *zoneConnector) Driver() driver.Driver { return z.inner.Driver() }

// Connect opens a session in the named zone, or at the zone's offset now when the server has no
// time zone tables (once refused, the pool does not ask again).
func (z *zoneConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if !z.offsets.Load() {
		c, err := z.inner.Connect(context.WithValue(ctx, sessionZoneKey{}, sessionZone{timeZone: z.name, loc: z.loc}))
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != errUnknownTimeZone {
			return c, err
		}
		z.offsets.Store(true)
	}
	off := offsetNow(z.loc)
	c, err := z.inner.Connect(context.WithValue(ctx, sessionZoneKey{}, sessionZone{timeZone: quoteOffset(off), loc: time.UTC}))
	if err != nil {
		return nil, err
	}
	dc, ok := c.(driverConn)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("mysqlpool: the driver's connection %T lacks a method the pool uses", c)
	}
	return &offsetConn{driverConn: dc, loc: z.loc, offset: off, session: time.FixedZone("", off)}, nil
}

func offsetNow(loc *time.Location) int {
	_, off := time.Now().In(loc).Zone()
	return off
}

// quoteOffset writes an offset (seconds east of UTC) as SET time_zone takes it: '+01:00'.
func quoteOffset(off int) string {
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("'%c%02d:%02d'", sign, off/3600, off/60%60)
}

// inZone is t's wall clock in loc.
func inZone(t time.Time, loc *time.Location) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), loc)
}

// driverConn is what the driver's connection implements and database/sql uses.
type driverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// offsetConn is a session at loc's offset (the server has no time zone tables) whose driver
// parses time values in UTC: it sets the offset again when loc's changes, writes time parameters
// as loc's wall clock and reads time columns each in its zone (offsetRows). database/sql uses a
// connection from one goroutine at a time.
type offsetConn struct {
	driverConn
	loc     *time.Location
	offset  int            // the session's time_zone, seconds east of UTC
	session *time.Location // the same, as a location
}

// follow sets the session's time_zone to loc's offset now when it differs.
func (c *offsetConn) follow(ctx context.Context) error {
	off := offsetNow(c.loc)
	if off == c.offset {
		return nil
	}
	if _, err := c.driverConn.ExecContext(ctx, "SET time_zone = "+quoteOffset(off), nil); err != nil {
		return err
	}
	c.offset, c.session = off, time.FixedZone("", off)
	return nil
}

// wall writes time parameters as loc's wall clock (the driver writes them in UTC, its location for
// this connection), as a connection in the named zone writes them.
func (c *offsetConn) wall(args []driver.NamedValue) []driver.NamedValue {
	for i, a := range args {
		if t, ok := a.Value.(time.Time); ok && !t.IsZero() { // zero: the driver's zero date
			args[i].Value = inZone(t.In(c.loc), time.UTC)
		}
	}
	return args
}

// rows reads r's time columns each in its zone.
func (c *offsetConn) rows(r driver.Rows) (driver.Rows, error) {
	dr, ok := r.(driverRows)
	if !ok {
		_ = r.Close()
		return nil, fmt.Errorf("mysqlpool: the driver's rows %T lack a method the pool uses", r)
	}
	o := &offsetRows{driverRows: dr, loc: c.loc, session: c.session}
	o.columns()
	return o, nil
}

func (c *offsetConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.follow(ctx); err != nil {
		return nil, err
	}
	return c.driverConn.ExecContext(ctx, query, c.wall(args))
}

func (c *offsetConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.follow(ctx); err != nil {
		return nil, err
	}
	r, err := c.driverConn.QueryContext(ctx, query, c.wall(args))
	if err != nil {
		return nil, err // driver.ErrSkip as it is: database/sql then prepares the statement
	}
	return c.rows(r)
}

func (c *offsetConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.driverConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	ds, ok := s.(driverStmt)
	if !ok {
		_ = s.Close()
		return nil, fmt.Errorf("mysqlpool: the driver's statement %T lacks a method the pool uses", s)
	}
	return &offsetStmt{driverStmt: ds, c: c}, nil
}

func (c *offsetConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// driverStmt is what the driver's prepared statement implements and database/sql uses.
type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
	driver.NamedValueChecker
}

// offsetStmt is a prepared statement of an offsetConn (database/sql prepares one when the driver
// cannot write the parameters into the statement).
type offsetStmt struct {
	driverStmt
	c *offsetConn
}

func (s *offsetStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.c.follow(ctx); err != nil {
		return nil, err
	}
	return s.driverStmt.ExecContext(ctx, s.c.wall(args))
}

func (s *offsetStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.c.follow(ctx); err != nil {
		return nil, err
	}
	r, err := s.driverStmt.QueryContext(ctx, s.c.wall(args))
	if err != nil {
		return nil, err
	}
	return s.c.rows(r)
}

func (s *offsetStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *offsetStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, v := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nv
}

// driverRows is what the driver's rows implement and database/sql uses.
type driverRows interface {
	driver.Rows
	driver.RowsNextResultSet
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// offsetRows reads an offsetConn's result: the driver parsed each time value's wall clock in UTC;
// a TIMESTAMP's is the session's offset's, a DATETIME's or a DATE's loc's. Values come in loc,
// as from a session in the named zone.
type offsetRows struct {
	driverRows
	loc, session *time.Location
	zones        []*time.Location // each column's; nil for a column of no time type
}

func (r *offsetRows) columns() {
	n := len(r.Columns())
	r.zones = r.zones[:0]
	for i := range n {
		var z *time.Location
		switch r.ColumnTypeDatabaseTypeName(i) {
		case "TIMESTAMP":
			z = r.session
		case "DATETIME", "DATE":
			z = r.loc
		}
		r.zones = append(r.zones, z)
	}
}

func (r *offsetRows) Next(dest []driver.Value) error {
	if err := r.driverRows.Next(dest); err != nil {
		return err
	}
	for i, z := range r.zones {
		if t, ok := dest[i].(time.Time); ok && z != nil && !t.IsZero() { // zero: the zero date
			dest[i] = inZone(t, z).In(r.loc)
		}
	}
	return nil
}

func (r *offsetRows) NextResultSet() error {
	if err := r.driverRows.NextResultSet(); err != nil {
		return err
	}
	r.columns()
	return nil
}
