package outbox

// StuckSQL exposes the stuck-list query to the tests' EXPLAIN.
func (o *Outbox) StuckSQL() string { return o.stuckSQL() }
