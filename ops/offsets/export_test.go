package offsets

// SetBeforeCommit stops an apply after its copies and before its commit, for the tests of what a
// crash in that window leaves.
func (m *Mover) SetBeforeCommit(f func(Plan) error) { m.beforeCommit = f }
