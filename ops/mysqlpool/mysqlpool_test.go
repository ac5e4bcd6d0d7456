package mysqlpool_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/catalog"
	"github.com/redrive/redrive/ops/mysqlpool"
)

func TestParseURL(t *testing.T) {
	cfg, err := mysqlpool.ParseURL("mysql://re%40drive:p%3Ass%2Fw@db.internal/orders?tls=skip-verify&timeout=3s&sql_mode=%27STRICT_ALL_TABLES%27&time_zone=%27Europe%2FBerlin%27&autocommit=0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "re@drive" || cfg.Passwd != "p:ss/w" || cfg.Addr != "db.internal:3306" || cfg.Net != "tcp" || cfg.DBName != "orders" {
		t.Errorf("user %q password %q addr %q net %q db %q", cfg.User, cfg.Passwd, cfg.Addr, cfg.Net, cfg.DBName)
	}
	if cfg.TLSConfig != "skip-verify" || cfg.Timeout != 3*time.Second || cfg.Params["sql_mode"] != "'STRICT_ALL_TABLES'" {
		t.Errorf("params: tls %q timeout %v params %v", cfg.TLSConfig, cfg.Timeout, cfg.Params)
	}
	// Whatever the URL says, the session runs in UTC with autocommit on, and times are read as UTC
	// time.Time.
	if !cfg.ParseTime || cfg.Loc != time.UTC || cfg.Params["time_zone"] != "'+00:00'" || cfg.Params["autocommit"] != "1" {
		t.Errorf("parseTime %v loc %v time_zone %q autocommit %q", cfg.ParseTime, cfg.Loc, cfg.Params["time_zone"], cfg.Params["autocommit"])
	}
	if v6, err := mysqlpool.ParseURL("mysql://u@[::1]:3307/d"); err != nil || v6.Addr != "[::1]:3307" || v6.Timeout != 10*time.Second {
		t.Errorf("IPv6: %+v %v", v6, err)
	}
	for _, bad := range []string{"postgres://u@h/d", "mysql://u:secret@h", "mysql://u:secret@h/", "mysql:///d", "mysql://u:secret@h/d/e",
		"mysql://u:secret@h/d?nosuchparam=1&tls=maybe"} {
		_, err := mysqlpool.ParseURL(bad)
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestDialect(t *testing.T) {
	d := mysqlpool.Dialect{}
	for typ, want := range map[string]catalog.TypeClass{"bigint(20)": catalog.Integer, "int(11) unsigned": catalog.Integer,
		"varchar(128)": catalog.Text, "longtext": catalog.Text, "datetime(6)": catalog.Timestamp, "timestamp": catalog.Timestamp,
		"date": catalog.Date, "json": catalog.JSON, "decimal(10,0)": catalog.Numeric, "blob": catalog.Binary,
		"enum('READY','SENT')": catalog.Other, "uuid": catalog.UUID} {
		if got := d.Class(typ); got != want {
			t.Errorf("%s: %s, want %s", typ, got, want)
		}
	}
	f := catalog.TableFacts{User: "redrive@10.0.0.%", Qualified: "orders.outbox_event"}
	if got := d.GrantUpdate(f, []string{"locked_until", "odd col"}); got != "GRANT UPDATE (locked_until, `odd col`) ON orders.outbox_event TO 'redrive'@'10.0.0.%';" {
		t.Errorf("grant update: %s", got)
	}
	if got := d.Grantee("o'neil@host"); got != "'o''neil'@'host'" {
		t.Errorf("grantee: %s", got)
	}
	if got := mysqlpool.QuotedTable("sales.outbox`x"); got != "`sales`.`outbox``x`" {
		t.Errorf("quoted table: %s", got)
	}
}
