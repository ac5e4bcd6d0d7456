package mysqlpool

import (
	"context"
	"time"

	"github.com/go-sql-driver/mysql"
)

// InZone makes cfg's sessions run in loc, for tables whose DATETIME columns were written in it
// (NOW() in a session of that zone): the session's time_zone, so that NOW() compares with the
// writers' clock, and loc for reading and writing DATETIME and TIMESTAMP values as time.Time. The
// session's zone is set as loc's offset when each connection opens: a named zone needs the
// server's time zone tables, which many servers do not load; a connection lives at most an hour,
// so a daylight-saving change reaches every session within one.
func InZone(cfg *mysql.Config, loc *time.Location) error {
	cfg.Loc = loc
	return cfg.Apply(mysql.BeforeConnect(func(_ context.Context, c *mysql.Config) error {
		c.Params["time_zone"] = "'" + time.Now().In(loc).Format("-07:00") + "'"
		return nil
	}))
}
