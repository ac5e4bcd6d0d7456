// Package benchtest gates the measurements of docs/benchmarks.md: tests that take minutes and
// most of a machine, run by hand one at a time and never by `make test`.
package benchtest

import (
	"os"
	"testing"
)

// Env turns the measurements on: REDRIVE_BENCH=1 go test ./pkg -run TestName -v -count=1.
const Env = "REDRIVE_BENCH"

// Require skips t unless Env is set, saying how to run it.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv(Env) == "" {
		t.Skip("set " + Env + "=1 to run (docs/benchmarks.md)")
	}
}
