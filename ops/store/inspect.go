package store

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/doctor"
)

// Inspect connects to dsn without running migrations and reads the facts the doctor checks (doctor.StoreFacts), for `console doctor`,
// which must change nothing. Errors wrap ops.ErrUnavailable (cannot connect) or ops.ErrInvalid.
func Inspect(ctx context.Context, dsn string) (doctor.StoreFacts, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return doctor.StoreFacts{}, fmt.Errorf("store: parse dsn: %w", ops.ErrInvalid)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.RuntimeParams["application_name"] = "redrive-doctor"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return doctor.StoreFacts{}, unavailable(err, "store")
	}
	defer pool.Close()
	return inspect(ctx, pool)
}

// Inspect reads the running store's facts (doctor.StoreFacts).
func (s *Store) Inspect(ctx context.Context) (doctor.StoreFacts, error) {
	return inspect(ctx, s.pool.Pool)
}

func inspect(ctx context.Context, pool *pgxpool.Pool) (doctor.StoreFacts, error) {
	var f doctor.StoreFacts
	var owner *string
	err := pool.QueryRow(ctx, `SELECT current_user::text, current_database()::text,
			has_database_privilege(current_database(), 'CREATE'),
			(SELECT pg_get_userbyid(nspowner)::text FROM pg_namespace WHERE nspname = $1)`, Schema).
		Scan(&f.User, &f.Database, &f.CreateOnDatabase, &owner)
	if err != nil {
		return f, unavailable(err, "store")
	}
	known, err := embeddedMigrations()
	if err != nil {
		return f, err
	}
	if owner == nil {
		for _, m := range known {
			f.Pending = append(f.Pending, m.name)
		}
		return f, nil
	}
	f.SchemaExists, f.SchemaOwner = true, *owner
	if err := pool.QueryRow(ctx, `SELECT has_schema_privilege($1, 'CREATE') AND has_schema_privilege($1, 'USAGE')`, Schema).
		Scan(&f.CreateOnSchema); err != nil {
		return f, fmt.Errorf("store: schema rights: %w", err)
	}
	rows, err := pool.Query(ctx, `SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT pg_has_role(c.relowner, 'USAGE') ORDER BY 1`, Schema)
	if err != nil {
		return f, fmt.Errorf("store: table owners: %w", err)
	}
	if f.NotOwned, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return f, fmt.Errorf("store: table owners: %w", err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, Schema+".schema_migrations").Scan(&exists); err != nil {
		return f, fmt.Errorf("store: migrations: %w", err)
	}
	applied := map[int]bool{}
	if exists {
		rows, err := pool.Query(ctx, `SELECT version FROM `+Schema+`.schema_migrations ORDER BY 1`)
		if err != nil {
			return f, fmt.Errorf("store: migrations: %w", err)
		}
		if f.Applied, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
			return f, fmt.Errorf("store: migrations: %w", err)
		}
		for _, v := range f.Applied {
			applied[v] = true
		}
	}
	for _, m := range known {
		if !applied[m.version] {
			f.Pending = append(f.Pending, m.name)
		}
	}
	return f, nil
}

type migration struct {
	version int
	name    string
}

func embeddedMigrations() ([]migration, error) {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []migration
	for _, f := range files {
		name := strings.TrimPrefix(f, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("store: migration %s: name must start with a number", name)
		}
		out = append(out, migration{v, name})
	}
	return out, nil
}
