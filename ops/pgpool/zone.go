package pgpool

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// InZone makes cfg's sessions run in loc, for tables whose timestamps without a zone were written
// in it (CURRENT_TIMESTAMP in a session of that zone): the session's TimeZone, so that now() and
// the casts to timestamptz compare them with the writers' clock, and the timestamp type read and
// written as wall clock in loc, so that a time.Time means the same instant both ways (pgx reads a
// timestamp as UTC and writes a time.Time's own wall clock otherwise). It chains cfg.AfterConnect.
func InZone(cfg *pgxpool.Config, loc *time.Location) {
	cfg.ConnConfig.RuntimeParams["timezone"] = loc.String()
	if loc == time.UTC {
		return
	}
	next := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		c.TypeMap().RegisterType(&pgtype.Type{Name: "timestamp", OID: pgtype.TimestampOID,
			Codec: zonedTimestamp{TimestampCodec: &pgtype.TimestampCodec{ScanLocation: loc}, loc: loc}})
		if next != nil {
			return next(ctx, c)
		}
		return nil
	}
}

// zonedTimestamp is pgx's timestamp codec, reading in loc (ScanLocation) and writing a time in loc.
type zonedTimestamp struct {
	*pgtype.TimestampCodec
	loc *time.Location
}

func (c zonedTimestamp) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	next := c.TimestampCodec.PlanEncode(m, oid, format, value)
	if next == nil {
		return nil
	}
	return encodeInZone{next: next, loc: c.loc}
}

type encodeInZone struct {
	next pgtype.EncodePlan
	loc  *time.Location
}

func (p encodeInZone) Encode(value any, buf []byte) ([]byte, error) {
	v, ok := value.(pgtype.TimestampValuer)
	if !ok {
		return p.next.Encode(value, buf)
	}
	ts, err := v.TimestampValue()
	if err != nil || !ts.Valid || ts.InfinityModifier != pgtype.Finite {
		return p.next.Encode(value, buf)
	}
	ts.Time = ts.Time.In(p.loc)
	return p.next.Encode(ts, buf)
}
