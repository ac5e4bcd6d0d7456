// Package devstack runs the real services Redrive is tested against —
// PostgreSQL, RabbitMQ and a Kafka-protocol broker (franz-go's kfake) —
// as private, loopback-only instances in a directory of the caller's
// choosing. It is used by `make test` (through cmd/devstack), by
// `make demo`, by CI and by integration tests that need to stop a
// dependency under a running console and start it again.
//
// PostgreSQL and RabbitMQ run as separate OS processes in their own
// process groups, so they survive the Go process that started them when
// asked to (`devstack up`); kfake runs inside the calling process.
// RabbitMQ runs as the host's 3.10 (Debian 12) or as 4.0, chrooted in a
// Debian 13 root that RabbitMQ4Root builds once and caches.
package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FreePort asks the kernel for a free TCP port on 127.0.0.1. The port is
// released before returning, so another process may take it in between;
// the starters retry with a new port when a port they picked is taken.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("devstack: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freePorts returns n distinct free ports, holding all listeners open until
// every port is chosen so that the same port is not returned twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("devstack: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portFree reports whether nothing listens on 127.0.0.1:port.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// tailFile returns the last n lines of the file at path ("" if unreadable).
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return tailLines(string(b), n)
}

func tailLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// withLogs appends the tails of the given log files to err.
func withLogs(err error, paths ...string) error {
	var b strings.Builder
	for _, p := range paths {
		if t := tailFile(p, 20); t != "" {
			fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", p, t)
		}
	}
	if b.Len() == 0 {
		return err
	}
	return fmt.Errorf("%w%s", err, b.String())
}

// run runs cmd and returns its combined output in the error if it fails.
func run(cmd *exec.Cmd) (string, error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, tailLines(out.String(), 20))
	}
	return out.String(), nil
}

// sandboxRoot keeps apt from dropping to its _apt user, which cannot write
// its temporary files to a /tmp that is not world-writable (seen: 0755),
// making `apt-get update` fail signature checks and keep stale lists.
const sandboxRoot = "-oAPT::Sandbox::User=root"

// aptInstall installs Debian packages, running `apt-get update` first if
// the first attempt fails (a fresh machine has no package lists).
func aptInstall(ctx context.Context, pkgs ...string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("devstack: %s not installed and not root: install it with apt-get install -y %s", strings.Join(pkgs, " "), strings.Join(pkgs, " "))
	}
	install := func() error {
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{sandboxRoot, "install", "-y"}, pkgs...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		_, err := run(cmd)
		return err
	}
	if err := install(); err == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, "apt-get", sandboxRoot, "update")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if _, err := run(cmd); err != nil {
		return fmt.Errorf("devstack: apt-get update: %w", err)
	}
	if err := install(); err != nil {
		return fmt.Errorf("devstack: apt-get install %s: %w", strings.Join(pkgs, " "), err)
	}
	return nil
}

// processGone reports whether pid no longer names a live process. A zombie
// (exited but not yet reaped by its parent) counts as gone.
func processGone(pid int) bool {
	if pid <= 0 {
		return true
	}
	if err := syscall.Kill(pid, 0); err != nil && errors.Is(err, syscall.ESRCH) {
		return true
	}
	state, _, err := procStat(pid)
	if err != nil {
		return true
	}
	return state == "Z" || state == "X"
}

// procStat reads pid's state and parent from /proc/<pid>/stat; either is "" when the line is cut
// short.
func procStat(pid int) (state, ppid string, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", "", err
	}
	// Format: pid (comm) state ppid ...; comm may contain spaces and parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		fields := strings.Fields(s[i+1:])
		if len(fields) > 0 {
			state = fields[0]
		}
		if len(fields) > 1 {
			ppid = fields[1]
		}
	}
	return state, ppid, nil
}

// processes are the pids /proc lists now.
func processes() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGone waits until pid is gone or the timeout elapses.
func waitGone(ctx context.Context, pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if processGone(pid) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return processGone(pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readPidFile reads the first line of a pid file (0 if absent).
func readPidFile(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// readState reads the state file a Start wrote in dir (typically another process's, e.g. `devstack
// up`), for an Open; none is "devstack: <none> in <dir>". It returns dir made absolute.
func readState[T any](dir, file, none string) (string, T, error) {
	var st T
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", st, err
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return "", st, fmt.Errorf("devstack: %s in %s: %w", none, dir, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return "", st, fmt.Errorf("devstack: %s: %w", file, err)
	}
	return dir, st, nil
}

// serviceDir is a service's Dir (its data, config and state file) made absolute; what names the
// service in the error when it is missing.
func serviceDir(what, dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("devstack: %s: Dir is required", what)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("devstack: %s: %w", what, err)
	}
	return abs, nil
}
