package mysqloutbox

import "context"

// StuckSQL exposes the stuck-list query to the tests' EXPLAIN.
func (s *Store) StuckSQL() string { return s.stuckSQL() }

// CountRow exposes the overview's read-uncommitted count to the test of what it leaves behind.
func (s *Store) CountRow(ctx context.Context, query string, dest ...any) error {
	return s.countRow(ctx, query, nil, dest...)
}
