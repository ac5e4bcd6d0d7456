package mysqlpool_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/mysqlpool"
	"github.com/redrive/redrive/ops/mysqltest"
)

// openPool is a pool of one connection on dsn in loc (nil: UTC), closed when t ends.
func openPool(t *testing.T, dsn string, loc *time.Location) *mysqlpool.Pool {
	t.Helper()
	cfg, err := mysqlpool.ParseURL(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if loc != nil {
		if err := mysqlpool.InZone(cfg, loc); err != nil {
			t.Fatal(err)
		}
	}
	p, err := mysqlpool.New(cfg, mysqlpool.Options{Name: "test", Key: "test.max_conns", MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// session is what the pool's session says: NOW(6) (a DATETIME: its wall clock, read in the
// pool's zone), its time_zone and its id.
func session(t *testing.T, p *mysqlpool.Pool) (now time.Time, tz string, id int64) {
	t.Helper()
	err := p.Do(context.Background(), func(c *sql.Conn) error {
		return c.QueryRowContext(context.Background(), `SELECT NOW(6), @@session.time_zone, CONNECTION_ID()`).Scan(&now, &tz, &id)
	})
	if err != nil {
		t.Fatal(err)
	}
	return now, tz, id
}

// A zone's daylight-saving change while the pool's session lives (it lives up to an hour): the
// session's NOW() stays the zone's clock across it — read in the zone, it is now, before and
// after — on the same connection, whether the server knows the zone by name (its time zone
// tables loaded) or not (the session at the zone's offset, set again after the change). With the
// offset set once when the session opened, NOW() was an hour off the writers' clock after the
// change: every lease an hour from its end looked expired.
func TestSessionFollowsDaylightSavingChange(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "Offset", true: "Named"}[named], func(t *testing.T) {
			t.Parallel()
			flip := time.Now().Add(3 * time.Second)
			loc := mysqltest.FlipZone(t, flip, 2*time.Hour, time.Hour, named) // an autumn change
			p := openPool(t, mysqltest.NewDatabase(t), loc)
			// Wall clocks compared: the hour before an autumn change and the hour after it show the
			// same wall clocks, which as instants are each ambiguous.
			wall := func(t time.Time) time.Time {
				return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
			}
			check := func(when string, wantTZ string) int64 {
				now, tz, id := session(t, p)
				clock := time.Now().In(loc)
				if d := wall(now).Sub(wall(clock)); d < -2*time.Second || d > 2*time.Second {
					t.Errorf("%s the change: the session's NOW() is %s, %v from the zone's clock (%s)",
						when, now.Format("15:04:05.000"), d.Round(time.Second), clock.Format("15:04:05.000"))
				}
				if tz != wantTZ {
					t.Errorf("%s the change: session time_zone %q, want %q", when, tz, wantTZ)
				}
				return id
			}
			wantTZ := func(off string) string {
				if named {
					return loc.String()
				}
				return off
			}
			before := check("before", wantTZ("+02:00"))
			time.Sleep(time.Until(flip) + 1500*time.Millisecond)
			if after := check("after", wantTZ("+01:00")); after != before {
				t.Errorf("the pool's session was replaced (%d, then %d): the test meant one session across the change", before, after)
			}
		})
	}
}

// TIMESTAMP columns hold instants; the session shows them in its time_zone. Instants of both
// halves of the year are read as themselves, and DATETIME columns (the writers' wall clock) as
// the zone's wall clock, whether the session runs in the zone's name or at its offset now — an
// offset that is not the zone's for the other half: a summer TIMESTAMP read in winter came an
// hour off. Parameters are the zone's wall clock; the statement prepared (the driver's binary
// protocol) reads the same.
func TestTimestampInBothDaylightSavingHalves(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "Offset", true: "Named"}[named], func(t *testing.T) {
			t.Parallel()
			now := time.Now().Truncate(time.Microsecond)
			flip := now.Add(-48 * time.Hour)
			loc := mysqltest.FlipZone(t, flip, 2*time.Hour, time.Hour, named) // winter now
			dsn := mysqltest.NewDatabase(t)
			summer, winter := flip.Add(-24*time.Hour), now.Add(-time.Hour)
			mysqltest.Exec(t, dsn, `CREATE TABLE zt (id INT PRIMARY KEY, ts TIMESTAMP(6) NULL, dt DATETIME(6) NULL)`)
			const wall = "2006-01-02 15:04:05.999999"
			for i, at := range []time.Time{summer, winter} {
				// Written as a service writes them: the instant (here from a UTC session), and the
				// zone's wall clock.
				mysqltest.Exec(t, dsn, `INSERT INTO zt VALUES (?, ?, ?)`, i+1, at.UTC().Format(wall), at.In(loc).Format(wall))
			}
			mysqltest.Exec(t, dsn, `SET SESSION sql_mode = ''; INSERT INTO zt VALUES (3, '0000-00-00', NULL)`)
			p := openPool(t, dsn, loc)
			ctx := context.Background()
			err := p.Do(ctx, func(c *sql.Conn) error {
				stmt, err := c.PrepareContext(ctx, `SELECT ts, dt FROM zt WHERE id = ?`)
				if err != nil {
					return err
				}
				defer stmt.Close()
				for i, at := range []time.Time{summer, winter} {
					var ts, dt, pts, pdt time.Time
					if err := c.QueryRowContext(ctx, `SELECT ts, dt FROM zt WHERE id = ?`, i+1).Scan(&ts, &dt); err != nil {
						return err
					}
					if err := stmt.QueryRowContext(ctx, i+1).Scan(&pts, &pdt); err != nil {
						return err
					}
					for _, got := range []struct {
						what string
						v    time.Time
					}{{"TIMESTAMP", ts}, {"DATETIME", dt}, {"TIMESTAMP (prepared)", pts}, {"DATETIME (prepared)", pdt}} {
						if !got.v.Equal(at) || got.v.Location() != loc {
							t.Errorf("row %d: %s read as %v (UTC %v); stored %v", i+1, got.what, got.v, got.v.UTC(), at.UTC())
						}
					}
					var n int
					if err := c.QueryRowContext(ctx, `SELECT count(*) FROM zt WHERE dt = ?`, at).Scan(&n); err != nil {
						return err
					}
					if n != 1 {
						t.Errorf("row %d: dt = %v (a parameter) matched %d rows", i+1, at, n)
					}
				}
				var zero time.Time
				if err := c.QueryRowContext(ctx, `SELECT ts FROM zt WHERE id = 3`).Scan(&zero); err != nil {
					return err
				}
				if !zero.IsZero() {
					t.Errorf("the zero date read as %v", zero)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// In UTC (the default) the session is as the URL's parser made it: time_zone '+00:00', times in
// UTC.
func TestUTCSession(t *testing.T) {
	p := openPool(t, mysqltest.NewDatabase(t), nil)
	now, tz, _ := session(t, p)
	if tz != "+00:00" || now.Location() != time.UTC {
		t.Errorf("time_zone %q, NOW() read in %v", tz, now.Location())
	}
	if d := time.Until(now); d < -2*time.Second || d > 2*time.Second {
		t.Errorf("NOW() %v from the clock", d)
	}
}
