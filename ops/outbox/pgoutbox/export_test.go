package pgoutbox

// StuckSQL exposes the stuck-list query to the tests' EXPLAIN.
func (s *Store) StuckSQL() string { return s.stuckSQL() }

// ReleaseBatch is how many rows one statement of a release takes.
const ReleaseBatch = releaseBatch
