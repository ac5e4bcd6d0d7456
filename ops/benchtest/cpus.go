package benchtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Hosts of their own, on one machine. In production the broker, the console and PostgreSQL each
// run on hosts (or pods with CPUs) of their own; on a 2-core test machine they share both cores,
// and every CPU second one of them spends is taken from the others: a measure of pace then charges
// the console's and PostgreSQL's work to the broker's speed, and a latency tail is mostly the
// kernel's scheduler. A benchmark that reads a CPU list from the environment (CPUsOf) gives the
// process under test those CPUs and everything else the rest, so both topologies can be measured
// on the same machine and reported side by side.

// CPUsOf reads a CPU list from the environment variable env, as taskset -c takes it ("0", "0,2",
// "1-3"): the CPUs for the process under test (server), and the others this process may run on
// (rest). ok is false when env is unset; a list that names no CPU this process may use, or all of
// them, fails tb.
func CPUsOf(tb testing.TB, env string) (server, rest unix.CPUSet, ok bool) {
	tb.Helper()
	list := os.Getenv(env)
	if list == "" {
		return server, rest, false
	}
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		tb.Fatal(err)
	}
	server, err := parseCPUList(list)
	if err != nil {
		tb.Fatalf("%s=%q: %v", env, list, err)
	}
	for c := range 1024 {
		if mine.IsSet(c) && !server.IsSet(c) {
			rest.Set(c)
		}
	}
	if rest.Count() == 0 || rest.Count() == mine.Count() {
		tb.Fatalf("%s=%q must name some but not all of the %d CPUs this process may run on", env, list, mine.Count())
	}
	return server, rest, true
}

// parseCPUList reads a CPU list as taskset -c takes it: numbers and ranges, comma-separated.
func parseCPUList(list string) (unix.CPUSet, error) {
	var cpus unix.CPUSet
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b >= 1024 {
			return cpus, fmt.Errorf("want a CPU list as taskset -c takes it, e.g. 0 or 0,2 or 1-3")
		}
		for c := a; c <= b; c++ {
			cpus.Set(c)
		}
	}
	return cpus, nil
}

// Pin sets the CPU affinity of every thread of each of pids to cpus, and restores each thread's
// own when the test ends (a shared broker or database must not stay pinned). Threads a process
// starts later inherit the affinity of the thread that starts them, and a child process that of
// its parent: pinning a running Go process, or a PostgreSQL postmaster, holds for what it starts.
func Pin(tb testing.TB, cpus unix.CPUSet, pids ...int) {
	tb.Helper()
	for _, pid := range pids {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
		if err != nil || len(tasks) == 0 {
			tb.Fatalf("pin process %d: it is not running on this machine", pid)
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(filepath.Base(task))
			if err != nil {
				continue
			}
			var was unix.CPUSet
			if unix.SchedGetaffinity(tid, &was) != nil {
				continue // the thread ended meanwhile
			}
			if err := unix.SchedSetaffinity(tid, &cpus); err != nil {
				tb.Fatalf("pin thread %d of process %d: %v", tid, pid, err)
			}
			tb.Cleanup(func() { _ = unix.SchedSetaffinity(tid, &was) })
		}
	}
}

// Children are the processes whose parent is pid (a PostgreSQL postmaster's backends and
// workers), from /proc.
func Children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, path := range stats {
		if fs := statFields(path); len(fs) > 1 && fs[1] == strconv.Itoa(pid) {
			if child, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
				out = append(out, child)
			}
		}
	}
	return out
}

// Parent is pid's parent process, 0 when pid is gone.
func Parent(pid int) int {
	fs := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if len(fs) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fs[1])
	return ppid
}

// CPUList is cpus as taskset -c writes it ("0,2"), for a benchmark's log.
func CPUList(cpus unix.CPUSet) string {
	var out []string
	for c := range 1024 {
		if cpus.IsSet(c) {
			out = append(out, strconv.Itoa(c))
		}
	}
	return strings.Join(out, ",")
}
