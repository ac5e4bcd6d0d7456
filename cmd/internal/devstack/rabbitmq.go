package devstack

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const rabbitBinDir = "/usr/lib/rabbitmq/bin"

// RabbitOptions configures StartRabbitMQ. Every port is on 127.0.0.1;
// 0 picks a free one.
type RabbitOptions struct {
	// Dir is the node's HOME (Erlang cookie), config, Mnesia data, logs and
	// devstack-rabbitmq.json. Required; created if missing.
	Dir string
	// AMQPPort is the AMQP 0-9-1 listener. The node is named
	// redrive-<AMQPPort>@localhost; a port left 0 reuses the one recorded
	// in Dir by an earlier start when it is free, so that restarting a
	// stack in the same Dir keeps its node name, data and URLs.
	AMQPPort int
	// ManagementPort is the HTTP management API and UI.
	ManagementPort int
	// DistPort is the Erlang distribution port (used by rabbitmqctl).
	DistPort int
	// EPMDPort is the port of this node's own epmd. Each node gets a
	// private epmd so that stopping it (epmd outlives the node otherwise)
	// never pulls the rug from another node on the machine.
	EPMDPort int
	// Root is a Debian root with its own rabbitmq-server (RabbitMQ4Root
	// returns one with RabbitMQ 4.0) in which the node runs, chrooted.
	// "" runs the host's RabbitMQ (3.10 on Debian 12), installed with
	// apt-get when missing.
	Root string
}

// RabbitMQ is a private RabbitMQ node started by StartRabbitMQ (or opened
// with OpenRabbitMQ). Its methods are not safe for concurrent use.
type RabbitMQ struct {
	dir                    string
	root                   string // RabbitOptions.Root
	amqp, mgmt, dist, epmd int
	node                   string

	// The server process when this process started it; Wait runs in a
	// goroutine so that it is reaped and an early exit is noticed.
	proc *os.Process
	done chan struct{}
}

type rabbitState struct {
	Node           string `json:"node"`
	AMQPPort       int    `json:"amqp_port"`
	ManagementPort int    `json:"management_port"`
	DistPort       int    `json:"dist_port"`
	EPMDPort       int    `json:"epmd_port"`
	Root           string `json:"root,omitempty"`
}

const rabbitStateFile = "devstack-rabbitmq.json"

// StartRabbitMQ starts a private RabbitMQ node listening on loopback only,
// with the management and shovel plugins enabled and management stats
// sampled every 500 ms, and waits until it accepts AMQP connections and its
// management API answers. It installs rabbitmq-server with apt-get first if
// it is missing and we are root (opts.Root must have it already). The node
// runs in its own process group and keeps running if the calling process
// exits; stop it with Stop.
func StartRabbitMQ(ctx context.Context, opts RabbitOptions) (*RabbitMQ, error) {
	dir, err := serviceDir("rabbitmq", opts.Dir)
	if err != nil {
		return nil, err
	}
	root := ""
	if opts.Root != "" {
		if root, err = filepath.Abs(opts.Root); err != nil {
			return nil, fmt.Errorf("devstack: rabbitmq: %w", err)
		}
		if !hasRabbitMQ(root) {
			return nil, fmt.Errorf("devstack: rabbitmq: no %s in the root %s (RabbitMQ4Root builds one)", rabbitBinDir+"/rabbitmq-server", root)
		}
	} else if _, err := os.Stat(filepath.Join(rabbitBinDir, "rabbitmq-server")); err != nil {
		start := time.Now()
		if err := aptInstall(ctx, "rabbitmq-server"); err != nil {
			return nil, fmt.Errorf("devstack: rabbitmq: %s/rabbitmq-server missing: %w", rabbitBinDir, err)
		}
		fmt.Fprintf(os.Stderr, "devstack: installed rabbitmq-server in %s\n", time.Since(start).Round(time.Second))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("devstack: rabbitmq: %w", err)
	}
	want := []int{opts.AMQPPort, opts.ManagementPort, opts.DistPort, opts.EPMDPort}
	// A Dir used before keeps its ports (and so its node name and data)
	// where they are still free.
	if prev, err := OpenRabbitMQ(dir); err == nil {
		if prev.Running() {
			return nil, fmt.Errorf("devstack: rabbitmq: node %s is already running in %s; stop it first", prev.node, dir)
		}
		for i, p := range []int{prev.amqp, prev.mgmt, prev.dist, prev.epmd} {
			if want[i] == 0 && p != 0 && portFree(p) {
				want[i] = p
			}
		}
	}
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			want = []int{opts.AMQPPort, opts.ManagementPort, opts.DistPort, opts.EPMDPort}
		}
		ports, err := pickPorts(want)
		if err != nil {
			return nil, err
		}
		r := &RabbitMQ{dir: dir, root: root, amqp: ports[0], mgmt: ports[1], dist: ports[2], epmd: ports[3]}
		r.node = fmt.Sprintf("redrive-%d@localhost", r.amqp)
		if err := r.writeConfig(); err != nil {
			return nil, err
		}
		err = r.Start(ctx)
		if err == nil {
			return r, nil
		}
		var busy *portBusyError
		if errors.As(err, &busy) && attempt < 3 {
			continue // a port picked as free was taken meanwhile
		}
		return nil, err
	}
}

type portBusyError struct{ port int }

func (e *portBusyError) Error() string {
	return fmt.Sprintf("port 127.0.0.1:%d is already in use", e.port)
}

// pickPorts replaces zeros in want with distinct free ports.
func pickPorts(want []int) ([]int, error) {
	n := 0
	for _, p := range want {
		if p == 0 {
			n++
		}
	}
	free, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(want))
	for i, p := range want {
		if p == 0 {
			p, free = free[0], free[1:]
		}
		out[i] = p
	}
	return out, nil
}

// OpenRabbitMQ returns a handle on a node that StartRabbitMQ started in
// dir (typically by another process, e.g. `devstack up`), to stop or
// restart it.
func OpenRabbitMQ(dir string) (*RabbitMQ, error) {
	dir, st, err := readState[rabbitState](dir, rabbitStateFile, "rabbitmq: no node")
	if err != nil {
		return nil, err
	}
	return &RabbitMQ{dir: dir, root: st.Root, node: st.Node, amqp: st.AMQPPort, mgmt: st.ManagementPort, dist: st.DistPort, epmd: st.EPMDPort}, nil
}

// URL is the AMQP URL for the guest user (guest may only connect from
// loopback, which is where the node listens).
func (r *RabbitMQ) URL() string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", r.amqp) }

// ManagementURL is the base URL of the management API and UI (guest/guest).
func (r *RabbitMQ) ManagementURL() string { return fmt.Sprintf("http://127.0.0.1:%d", r.mgmt) }

// AMQPPort, ManagementPort, DistPort and EPMDPort are the node's ports on 127.0.0.1.
func (r *RabbitMQ) AMQPPort() int       { return r.amqp }
func (r *RabbitMQ) ManagementPort() int { return r.mgmt }
func (r *RabbitMQ) DistPort() int       { return r.dist }
func (r *RabbitMQ) EPMDPort() int       { return r.epmd }

// Node is the Erlang node name, e.g. redrive-5672@localhost.
func (r *RabbitMQ) Node() string { return r.node }

// Dir is the node's directory (opts.Dir made absolute).
func (r *RabbitMQ) Dir() string { return r.dir }

// Root is the Debian root the node runs in ("" for the host's RabbitMQ).
func (r *RabbitMQ) Root() string { return r.root }

// nodeDir is Dir as the node sees it. A node in a Root sees Dir at
// /var/lib/redrive-nodes/<hash of Dir> inside the root (inRoot binds it
// there), a path of its own so that its processes can be told from other
// nodes' by their environment (isOurBeam).
func (r *RabbitMQ) nodeDir() string {
	if r.root == "" {
		return r.dir
	}
	sum := sha256.Sum256([]byte(r.dir))
	return "/var/lib/redrive-nodes/" + hex.EncodeToString(sum[:6])
}

// LogPath is the node's main log; StartupLogPath its stdout and stderr.
func (r *RabbitMQ) LogPath() string        { return filepath.Join(r.dir, "log", "rabbit.log") }
func (r *RabbitMQ) StartupLogPath() string { return filepath.Join(r.dir, "startup.log") }

// Env is the environment under which the node runs; rabbitmqctl and
// friends need it (cookie in HOME, node name, epmd port) to reach the node:
//
//	cmd := exec.Command("/usr/lib/rabbitmq/bin/rabbitmqctl", "list_queues")
//	cmd.Env = r.Env()
//
// For a node in a Root its paths are inside the root, and only a command
// run there as Ctl runs it finds them; use Ctl.
func (r *RabbitMQ) Env() []string {
	d := r.nodeDir()
	path := os.Getenv("PATH")
	if r.root != "" {
		path = "/usr/sbin:/usr/bin:/sbin:/bin" // the host's PATH means nothing in the root
	}
	return []string{
		"HOME=" + d,
		"PATH=" + path,
		"LANG=C.UTF-8", "LC_ALL=C.UTF-8",
		"RABBITMQ_NODENAME=" + r.node,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT=" + strconv.Itoa(r.amqp),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(r.dist),
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(d, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(d, "log"),
		"RABBITMQ_LOGS=" + filepath.Join(d, "log", "rabbit.log"),
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(d, "rabbitmq.conf"),
		"RABBITMQ_ADVANCED_CONFIG_FILE=" + filepath.Join(d, "advanced.config"),
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(d, "enabled_plugins"),
		"RABBITMQ_PID_FILE=" + filepath.Join(d, "rabbit.pid"),
		"RABBITMQ_CONF_ENV_FILE=" + filepath.Join(d, "none"), // skip /etc/rabbitmq/rabbitmq-env.conf
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"ERL_EPMD_PORT=" + strconv.Itoa(r.epmd),
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}",
	}
}

func (r *RabbitMQ) pidFile() string { return filepath.Join(r.dir, "rabbit.pid") }

// command runs one of RabbitMQ's programs (bin, a path under rabbitBinDir)
// for this node, in the node's environment: on the host, or in the node's
// Root (inRoot). The command gets a process group of its own, away from the
// terminal's Ctrl-C.
func (r *RabbitMQ) command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if r.root == "" {
		cmd = exec.CommandContext(ctx, bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	} else {
		cmd = inRoot(ctx, r.root, r.dir, r.nodeDir(), append([]string{bin}, args...)...)
	}
	cmd.Dir = r.dir
	cmd.Env = r.Env()
	return cmd
}

// Start starts the node (again, after Stop or Kill) on the same ports,
// node name and data, and waits until it is ready. StartRabbitMQ already
// calls it.
func (r *RabbitMQ) Start(ctx context.Context) error {
	if r.Running() {
		return nil
	}
	for _, p := range []int{r.amqp, r.mgmt, r.dist} {
		if !portFree(p) {
			return fmt.Errorf("devstack: rabbitmq: %w", &portBusyError{p})
		}
	}
	_ = os.Remove(r.pidFile())
	logf, err := os.OpenFile(r.StartupLogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("devstack: rabbitmq: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== devstack: starting %s at %s\n", r.node, time.Now().Format(time.RFC3339))
	// Not ctx: the node must outlive it (and, for `devstack up`, this
	// process). Its own process group keeps the terminal's Ctrl-C away
	// from it; the caller stops it with Stop.
	cmd := r.command(context.Background(), filepath.Join(rabbitBinDir, "rabbitmq-server"))
	cmd.Stdout = logf
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("devstack: rabbitmq: start: %w", err)
	}
	done := make(chan struct{})
	r.proc, r.done = cmd.Process, done
	go func() {
		_ = cmd.Wait()
		close(done)
	}()

	fail := func(err error) error {
		_ = r.Kill(context.Background())
		return withLogs(fmt.Errorf("devstack: rabbitmq %s: %w", r.node, err), r.StartupLogPath(), r.LogPath())
	}
	// Abort the readiness checks as soon as the server process exits.
	wctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	go func() {
		select {
		case <-done:
			cancel()
		case <-wctx.Done():
		}
	}()
	exited := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	nodePidFile := filepath.Join(r.nodeDir(), "rabbit.pid")
	// rabbitmqctl wait reads the pid file once it appears and gives up on what it finds there
	// ("garbage_in_pid_file") when it read it before the server finished writing it, which a chaos
	// test's restart met once in CI: it is called when the file holds a pid.
	for readPidFile(r.pidFile()) <= 0 { // the host's path of it (a Root's node sees r.dir as its nodeDir)
		if exited() {
			return fail(errors.New("server exited during startup"))
		}
		select {
		case <-wctx.Done():
			return fail(fmt.Errorf("no pid in %s: %w", r.pidFile(), wctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, args := range [][]string{{"wait", "--timeout", "90", nodePidFile}, {"await_startup", "--timeout", "90"}} {
		if _, err := r.ctl(wctx, args...); err != nil {
			if exited() {
				return fail(errors.New("server exited during startup"))
			}
			return fail(err)
		}
	}
	if err := r.waitManagement(wctx); err != nil {
		if exited() {
			return fail(errors.New("server exited during startup"))
		}
		return fail(err)
	}
	r.writeState()
	return nil
}

// waitManagement polls GET /api/overview with guest/guest until it answers 200.
func (r *RabbitMQ) waitManagement(ctx context.Context) error {
	client := &http.Client{Timeout: 3 * time.Second}
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.ManagementURL()+"/api/overview", nil)
		req.SetBasicAuth("guest", "guest")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /api/overview: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("management API not ready: %w (last: %v)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ctl runs rabbitmqctl against this node.
func (r *RabbitMQ) ctl(ctx context.Context, args ...string) (string, error) {
	cmd := r.command(ctx, filepath.Join(rabbitBinDir, "rabbitmqctl"), args...)
	cmd.WaitDelay = 5 * time.Second
	return run(cmd)
}

// Ctl runs rabbitmqctl with args against this node and returns its output
// (e.g. Ctl(ctx, "list_queues", "name", "messages")).
func (r *RabbitMQ) Ctl(ctx context.Context, args ...string) (string, error) {
	return r.ctl(ctx, args...)
}

// pids returns the node's live server processes: the rabbitmq-server
// wrapper script if this process started it (it runs beam.smp as a child,
// relays SIGTERM to it and waits for it), and the beam.smp named in the pid
// file, provided it is this node's.
func (r *RabbitMQ) pids() (wrapper, beam int) {
	if r.proc != nil {
		select {
		case <-r.done:
		default:
			wrapper = r.proc.Pid
		}
	}
	if pid := readPidFile(r.pidFile()); pid > 0 && !processGone(pid) && r.isOurBeam(pid) {
		beam = pid
	}
	return wrapper, beam
}

// isOurBeam tells whether pid is a beam.smp running this node (so that a
// stale pid file never gets another process signalled).
func (r *RabbitMQ) isOurBeam(pid int) bool {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	cl, err := os.ReadFile(filepath.Join(proc, "cmdline"))
	if err != nil || !strings.Contains(string(cl), "beam") {
		return false
	}
	env, err := os.ReadFile(filepath.Join(proc, "environ"))
	if err != nil {
		return false
	}
	want := "RABBITMQ_MNESIA_BASE=" + filepath.Join(r.nodeDir(), "mnesia")
	for _, kv := range strings.Split(string(env), "\x00") {
		if kv == want {
			return true
		}
	}
	return false
}

// Running reports whether the node's server process is alive.
func (r *RabbitMQ) Running() bool {
	w, b := r.pids()
	return w != 0 || b != 0
}

// Stop shuts the node down gracefully (SIGTERM: RabbitMQ stops its
// applications and exits; 3.10 takes ~6 s, 5 of them a fixed wait in the
// management agent), escalating to SIGKILL after 60 s, and then stops the
// node's epmd, which would otherwise keep running. Stopping a stopped node
// only makes sure its epmd is gone. A node in a Root leaves no mount behind
// (inRoot's mounts die with its processes).
func (r *RabbitMQ) Stop(ctx context.Context) error {
	var err error
	wrapper, beam := r.pids()
	if target := cmp.Or(beam, wrapper); target != 0 {
		_ = syscall.Kill(target, syscall.SIGTERM)
		if !r.waitExit(ctx, wrapper, beam, 60*time.Second) {
			r.killProcs(wrapper, beam)
			if !r.waitExit(context.Background(), wrapper, beam, 10*time.Second) {
				err = fmt.Errorf("devstack: rabbitmq %s: server (pid %d) did not exit", r.node, target)
			}
		}
	}
	if e := r.stopEPMD(); e != nil && err == nil {
		err = e
	}
	r.removeMountPoint()
	return err
}

// WaitQuorumQueueSaved waits until the node has saved on disk that its
// member of the quorum queue in vhost is registered, so that a Kill after
// it recovers the queue's messages. RabbitMQ 4.0.5 (Ra 2.14) keeps that
// registration in a dets table it writes out about a second after the
// queue is declared: killed in that window, the node restarts the queue's
// member "as a new one" (rabbit.log: "was not found on this node …
// name_not_registered"), empty. That is the broker's behaviour, not a
// client's, so a crash test waits for it before it kills.
func (r *RabbitMQ) WaitQuorumQueueSaved(ctx context.Context, vhost, queue string) error {
	names := filepath.Join(r.dir, "mnesia", r.node, "quorum", r.node, "names.dets")
	want := []byte(url.PathEscape(vhost) + "_" + queue) // the member's Ra name, as RabbitMQ builds it
	for {
		if b, err := os.ReadFile(names); err == nil && bytes.Contains(b, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devstack: rabbitmq %s: quorum queue %q in vhost %q not saved in %s: %w", r.node, queue, vhost, names, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Kill ends the node abruptly (SIGKILL), as a crash would, and stops its
// epmd. The next Start recovers its data.
func (r *RabbitMQ) Kill(ctx context.Context) error {
	var err error
	wrapper, beam := r.pids()
	if wrapper != 0 || beam != 0 {
		r.killProcs(wrapper, beam)
		if !r.waitExit(ctx, wrapper, beam, 10*time.Second) {
			err = fmt.Errorf("devstack: rabbitmq %s: server did not exit after SIGKILL", r.node)
		}
	}
	_ = os.Remove(r.pidFile())
	if e := r.stopEPMD(); e != nil && err == nil {
		err = e
	}
	r.removeMountPoint()
	return err
}

// removeMountPoint removes the empty folder inRoot binds Dir on in the
// root, once the node is gone: removed under a running node, it would take
// the node's Dir away from it (the kernel detaches mounts on a folder
// removed in another mount namespace).
func (r *RabbitMQ) removeMountPoint() {
	if r.root != "" && !r.Running() {
		_ = os.Remove(filepath.Join(r.root, r.nodeDir()))
	}
}

// killProcs sends SIGKILL to the server's process group (the wrapper and
// beam.smp; Setpgid made the wrapper its leader) and to each process.
// erl_child_setup and inet_gethost run in sessions of their own and exit
// when beam.smp does.
func (r *RabbitMQ) killProcs(pids ...int) {
	self := syscall.Getpgrp()
	for _, pid := range pids {
		if pid == 0 {
			continue
		}
		if pg, err := syscall.Getpgid(pid); err == nil && pg > 1 && pg != self {
			_ = syscall.Kill(-pg, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// waitExit waits until the server processes have exited (the wrapper, if
// ours, also reaped) or the timeout elapses.
func (r *RabbitMQ) waitExit(ctx context.Context, wrapper, beam int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	if beam != 0 && !waitGone(ctx, beam, timeout) {
		return false
	}
	if wrapper != 0 {
		select {
		case <-r.done:
		case <-ctx.Done():
			return false
		case <-time.After(time.Until(deadline)):
			return false
		}
	}
	return true
}

// stopEPMD stops the epmd serving this node's port: `epmd -kill` first,
// then SIGKILL to any epmd process still bound to the port.
func (r *RabbitMQ) stopEPMD() error {
	if r.epmd == 0 {
		return nil
	}
	if bin := epmdBinary(); bin != "" {
		for range 20 {
			cmd := exec.Command(bin, "-port", strconv.Itoa(r.epmd), "-kill")
			cmd.Env = r.Env()
			out, _ := cmd.CombinedOutput()
			// "Killing not allowed - living nodes in database." means the
			// node's registration has not gone yet: retry shortly.
			if !strings.Contains(string(out), "living nodes") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	pids := epmdPids(r.epmd)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range pids {
		if !waitGone(context.Background(), pid, 5*time.Second) {
			return fmt.Errorf("devstack: rabbitmq: epmd pid %d on port %d did not exit", pid, r.epmd)
		}
	}
	return nil
}

func epmdBinary() string {
	if p, err := exec.LookPath("epmd"); err == nil {
		return p
	}
	if m, _ := filepath.Glob("/usr/lib/erlang/erts-*/bin/epmd"); len(m) > 0 {
		return m[len(m)-1]
	}
	return ""
}

// epmdPids finds epmd processes started for port: their command line says
// -port N, or their environment has ERL_EPMD_PORT=N (how erl starts it).
func epmdPids(port int) []int {
	ps := strconv.Itoa(port)
	var pids []int
	for _, pid := range processes() {
		proc := filepath.Join("/proc", strconv.Itoa(pid))
		cl, err := os.ReadFile(filepath.Join(proc, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cl), "\x00"), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != "epmd" {
			continue
		}
		match := false
		for i, a := range args {
			if a == "-port" && i+1 < len(args) && args[i+1] == ps {
				match = true
			}
		}
		if env, err := os.ReadFile(filepath.Join(proc, "environ")); err == nil {
			for _, kv := range strings.Split(string(env), "\x00") {
				if kv == "ERL_EPMD_PORT="+ps {
					match = true
				}
			}
		}
		if match && !processGone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// writeConfig writes the node's config files and a fresh Erlang cookie
// (kept if present: rabbitmqctl must use the same one as the node).
func (r *RabbitMQ) writeConfig() error {
	files := map[string]string{
		"rabbitmq.conf": fmt.Sprintf(`# written by devstack
listeners.tcp.default = 127.0.0.1:%d
management.tcp.ip = 127.0.0.1
management.tcp.port = %d
collect_statistics_interval = 500
`, r.amqp, r.mgmt),
		"enabled_plugins": "[rabbitmq_management,rabbitmq_shovel,rabbitmq_shovel_management].\n",
		// Keep fine-grained samples so that counts in the management API
		// follow the broker within about a second.
		"advanced.config": "[{rabbitmq_management_agent,[{sample_retention_policies," +
			"[{global,[{605,1}]},{basic,[{605,1}]},{detailed,[{10,1}]}]}]}].\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("devstack: rabbitmq: %w", err)
		}
	}
	cookie := filepath.Join(r.dir, ".erlang.cookie")
	if _, err := os.Stat(cookie); err != nil {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		if err := os.WriteFile(cookie, []byte(strings.ToUpper(hex.EncodeToString(b))), 0o400); err != nil {
			return fmt.Errorf("devstack: rabbitmq: %w", err)
		}
	}
	r.writeState()
	return nil
}

func (r *RabbitMQ) writeState() {
	st, _ := json.Marshal(rabbitState{Node: r.node, AMQPPort: r.amqp, ManagementPort: r.mgmt, DistPort: r.dist, EPMDPort: r.epmd, Root: r.root})
	_ = os.WriteFile(filepath.Join(r.dir, rabbitStateFile), st, 0o644)
}
