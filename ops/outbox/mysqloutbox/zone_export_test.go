package mysqloutbox

import (
	"context"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/mysqlpool"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/outbox/sqlregistry"
)

// OpenInZone is Open with the outbox's time_zone given as a location, not a name: a zone of the
// test's own (mysqltest.FlipZone), which time.LoadLocation cannot find. The Store is New's, its
// pool built again from the same URL and options in loc, as New builds it in cfg.Location().
func OpenInZone(ctx context.Context, cfg configs.Outbox, loc *time.Location) (*outbox.Outbox, error) {
	return sqlregistry.OpenSeed(ctx, cfg, func(ctx context.Context, cfg configs.Outbox) (*Store, error) {
		s, err := New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		dcfg, err := mysqlpool.ParseURL(string(cfg.DSN))
		if err == nil {
			err = mysqlpool.InZone(dcfg, loc)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
		opts := s.pool.Options()
		s.pool.Close()
		s.pool, err = mysqlpool.New(dcfg, opts)
		return s, err
	})
}
