// Package benchtest gates the measurements of docs/benchmarks.md: tests that take minutes and
// most of a machine, run by hand one at a time and never by `make test`.
package benchtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
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

// ProcCPU is the user and system CPU seconds of pid (all its threads) from /proc/<pid>/stat; 0
// for a process that is gone. A benchmark reads it before and after a side to charge each process
// (broker, console, database) its own share.
func ProcCPU(pid int) float64 {
	fs := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if len(fs) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(fs[11], 64)
	st, _ := strconv.ParseFloat(fs[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// statFields are the fields of a /proc/<pid>/stat file from the third (state, ppid, …) on, after
// the command's name (which may hold spaces and parentheses); nil when the process is gone.
func statFields(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil
	}
	return strings.Fields(s[i+2:])
}
