package kfaketest

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// External runs kfake in a process of its own (`devstack kafka`, built without the race detector
// whatever the test's flags) with topics (name → partitions) and returns its address; the process
// is killed when tb ends, or when the test binary dies.
//
// Use it where a test or benchmark measures the console's own speed: an in-process kfake built
// with -race costs several times the CPU of the broker it stands for, and on a loaded machine it
// starves the console it shares the process with (a 100,000-record plan took 19.8 s instead of
// 7 s; twenty readers of a DLT page timed out). Production Kafka is another process too.
func External(tb testing.TB, topics map[string]int32) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "devstack")
	// The module path, not a relative one: it builds from any package's directory. The build
	// cache makes every build after the first a link.
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/redrive/redrive/cmd/devstack").CombinedOutput(); err != nil {
		tb.Fatalf("building devstack: %v: %s", err, out)
	}
	args := []string{"kafka", "--addr", "127.0.0.1:0"}
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		args = append(args, "--topic", fmt.Sprintf("%s:%d", name, topics[name]))
	}
	cmd := exec.Command(bin, args...)
	// Killed with the test binary too (a timeout's panic, kill -9), not left listening.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	var said []string
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "listening on "); ok {
			addr, _, _ := strings.Cut(rest, ";")
			go func() { _, _ = io.Copy(io.Discard, stderr) }() // kfake's log, drained so it never blocks
			addr = strings.Split(addr, ",")[0]
			if !strings.HasPrefix(addr, "127.0.0.1:") {
				tb.Fatalf("devstack kafka listens on %s, want loopback", addr)
			}
			return addr
		}
		said = append(said, lines.Text())
	}
	tb.Fatalf("devstack kafka did not say where it listens: %s", strings.Join(said, "\n"))
	return ""
}
