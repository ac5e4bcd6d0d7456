package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

func (d *Doctor) checkStore(ctx context.Context, r *recorder) {
	st := d.ad.Store
	if st == nil {
		st = noStore{}
	}
	schema, ident := st.Schema(), st.Ident
	f, err := st.Inspect(ctx, string(d.cfg.Store.DSN))
	if err != nil {
		r.fail("connect", "check store.dsn (host, port, user, password, database) and that PostgreSQL accepts the console's address (pg_hba.conf)",
			"cannot connect: %s", short(err))
		return
	}
	r.ok("connect", "database %s as %s", f.Database, f.User)
	switch {
	case !f.SchemaExists:
		r.ok("migrations", "schema %s does not exist yet: the first start creates it and applies %d migrations", schema, len(f.Pending))
	case len(f.Pending) > 0:
		r.warn("migrations", "nothing to do by hand: the next start applies them (under a lock, once for all replicas)",
			"%d of %d migrations pending: %s", len(f.Pending), len(f.Applied)+len(f.Pending), strings.Join(f.Pending, ", "))
	default:
		r.ok("migrations", "all %d applied", len(f.Applied))
	}
	user := ident(f.User)
	if !f.SchemaExists {
		if f.CreateOnDatabase {
			r.ok("migration rights", "%s may create schema %s in database %s", f.User, schema, f.Database)
		} else {
			r.fail("migration rights", fmt.Sprintf("GRANT CREATE ON DATABASE %s TO %s;", ident(f.Database), user),
				"%s may not create schema %s in database %s: the console cannot start", f.User, schema, f.Database)
		}
		return
	}
	var fixes []string
	var why []string
	if !f.CreateOnSchema {
		fixes = append(fixes, fmt.Sprintf("GRANT USAGE, CREATE ON SCHEMA %s TO %s;", schema, user))
		why = append(why, fmt.Sprintf("no CREATE on schema %s (owned by %s)", schema, f.SchemaOwner))
	}
	for _, t := range f.NotOwned {
		fixes = append(fixes, fmt.Sprintf("ALTER TABLE %s.%s OWNER TO %s;", schema, ident(t), user))
	}
	if len(f.NotOwned) > 0 {
		why = append(why, fmt.Sprintf("does not own %s", strings.Join(f.NotOwned, ", ")))
	}
	switch {
	case len(fixes) == 0:
		r.ok("migration rights", "%s may run migrations in schema %s", f.User, schema)
	case len(f.Pending) > 0:
		r.fail("migration rights", strings.Join(fixes, "\n"), "%s %s: the pending migrations will fail at start", f.User, strings.Join(why, "; "))
	default:
		r.warn("migration rights", strings.Join(fixes, "\n"), "%s %s: the next version's migrations would fail", f.User, strings.Join(why, "; "))
	}
}

// noStore is the store of a doctor given none: its connect check fails, saying so.
type noStore struct{}

func (noStore) Inspect(context.Context, string) (StoreFacts, error) {
	return StoreFacts{}, errors.New("store: the doctor was given no way to inspect it")
}
func (noStore) Schema() string        { return "" }
func (noStore) Ident(s string) string { return s }
