package mysqloutbox

// StuckSQL exposes the stuck-list query to the tests' EXPLAIN.
func (s *Store) StuckSQL() string { return s.stuckSQL() }
