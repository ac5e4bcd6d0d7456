package devstack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// MariaDBOptions configures StartMariaDB.
type MariaDBOptions struct {
	// Dir holds the server: data/, my.cnf, server.log and devstack-mariadb.json. Required. It is
	// created if missing; a Dir that already holds a data directory is reused
	// (mariadb-install-db is skipped).
	Dir string
	// Port to listen on (127.0.0.1 only). 0 picks a free port, preferring the one recorded in Dir
	// by an earlier start.
	Port int
}

// MariaDB is a private MariaDB server (Debian 12's mariadb-server, 10.11) started by StartMariaDB
// or opened with OpenMariaDB. Its methods are not safe for concurrent use.
type MariaDB struct {
	dir, data, sock, cnf, pidPath, logPath string
	port                                   int
}

type mariadbState struct {
	Port int `json:"port"`
}

const mariadbStateFile = "devstack-mariadb.json"

// The account StartMariaDB creates for TCP clients (root logs in through the socket only): every
// right, with GRANT OPTION, so that tests may create databases and accounts and grant rights.
const (
	MariaDBUser     = "redrive"
	MariaDBPassword = "redrive"
)

// StartMariaDB initialises (if needed) and starts a MariaDB server in opts.Dir, listening on
// 127.0.0.1 only, without a binary log, writing InnoDB's log at each commit but flushing it to
// disk once a second (innodb_flush_log_at_trx_commit=2: fast, and a committed transaction survives
// Kill of the server, as it would a crash of the server alone), as root (mariadbd --user=root).
// It creates the TCP account MariaDBUser. mariadb-server and mariadb-client are installed with
// apt-get first when they are missing and we are root.
func StartMariaDB(ctx context.Context, opts MariaDBOptions) (*MariaDB, error) {
	dir, err := serviceDir("mariadb", opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := mariadbBinaries(ctx); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("devstack: mariadb: %w", err)
	}
	m := newMariaDB(dir, 0)
	if opts.Port != 0 && !portFree(opts.Port) {
		return nil, fmt.Errorf("devstack: mariadb: port 127.0.0.1:%d is already in use", opts.Port)
	}
	if m.Running() {
		return nil, fmt.Errorf("devstack: mariadb: a server is already running in %s (%s); stop it first", dir, m.pidPath)
	}
	port := opts.Port
	for attempt := 1; ; attempt++ {
		if opts.Port == 0 {
			prev, err := OpenMariaDB(dir)
			if attempt == 1 && err == nil && prev.port != 0 && portFree(prev.port) {
				port = prev.port
			} else if port, err = FreePort(); err != nil {
				return nil, err
			}
		} else if !portFree(port) {
			return nil, fmt.Errorf("devstack: mariadb: port 127.0.0.1:%d is already in use", port)
		}
		m = newMariaDB(dir, port)
		if err := m.writeConfig(); err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(m.data, "mysql")); err != nil {
			if _, err := run(exec.CommandContext(ctx, mariadbBin("mariadb-install-db"), "--defaults-file="+m.cnf, "--user=root",
				"--auth-root-authentication-method=socket", "--skip-test-db")); err != nil {
				return nil, fmt.Errorf("devstack: mariadb: mariadb-install-db: %w", err)
			}
		}
		err := m.Start(ctx)
		if err == nil {
			break
		}
		// Someone else took the free port between our check and the bind.
		if opts.Port == 0 && attempt < 3 && strings.Contains(tailFile(m.logPath, 20), "Address already in use") {
			continue
		}
		return nil, err
	}
	if err := m.client(ctx, fmt.Sprintf(`CREATE USER IF NOT EXISTS '%[1]s'@'127.0.0.1' IDENTIFIED BY '%[2]s';
		GRANT ALL ON *.* TO '%[1]s'@'127.0.0.1' WITH GRANT OPTION;`, MariaDBUser, MariaDBPassword)); err != nil {
		_ = m.Stop(context.Background())
		return nil, fmt.Errorf("devstack: mariadb: create the TCP account: %w", err)
	}
	return m, nil
}

func newMariaDB(dir string, port int) *MariaDB {
	sock := filepath.Join(dir, "mariadb.sock")
	if len(sock) > 100 { // sun_path holds 108 bytes
		sum := sha256.Sum256([]byte(dir))
		sock = filepath.Join(os.TempDir(), "redrive-mariadb-"+hex.EncodeToString(sum[:6])+".sock")
	}
	return &MariaDB{dir: dir, data: filepath.Join(dir, "data"), sock: sock, cnf: filepath.Join(dir, "my.cnf"),
		pidPath: filepath.Join(dir, "mariadbd.pid"), logPath: filepath.Join(dir, "server.log"), port: port}
}

// OpenMariaDB returns a handle on a server that StartMariaDB created in dir (typically by another
// process, e.g. `devstack up`), so that it can be stopped or restarted.
func OpenMariaDB(dir string) (*MariaDB, error) {
	dir, st, err := readState[mariadbState](dir, mariadbStateFile, "mariadb: no server")
	if err != nil {
		return nil, err
	}
	return newMariaDB(dir, st.Port), nil
}

// DSN is the mysql:// URL of database db as MariaDBUser.
func (m *MariaDB) DSN(db string) string {
	return fmt.Sprintf("mysql://%s:%s@127.0.0.1:%d/%s", MariaDBUser, MariaDBPassword, m.port, db)
}

// Port is the TCP port on 127.0.0.1.
func (m *MariaDB) Port() int { return m.port }

// Dir is the server's directory (opts.Dir made absolute).
func (m *MariaDB) Dir() string { return m.dir }

// LogPath is the server's error log.
func (m *MariaDB) LogPath() string { return m.logPath }

// Start starts the server again after Stop or Kill, on the same port and data directory, and
// waits until it answers. StartMariaDB already calls it.
func (m *MariaDB) Start(ctx context.Context) error {
	if m.Running() {
		return nil
	}
	if !portFree(m.port) {
		return fmt.Errorf("devstack: mariadb: port 127.0.0.1:%d is already in use", m.port)
	}
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("devstack: mariadb: %w", err)
	}
	defer log.Close()
	// Not tied to ctx: the server outlives the start (`devstack up`).
	cmd := exec.Command(mariadbBin("mariadbd"), "--defaults-file="+m.cnf, "--user=root")
	cmd.Dir = m.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a Ctrl-C at the caller's terminal does not reach it
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("devstack: mariadb: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps it whenever it ends
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := m.client(ctx, "SELECT 1"); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			return withLogs(fmt.Errorf("devstack: mariadb: exited during start on port %d: %v", m.port, err), m.logPath)
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return withLogs(fmt.Errorf("devstack: mariadb: not ready on port %d after 60 s", m.port), m.logPath)
		}
	}
}

// Stop shuts the server down (SIGTERM: a clean shutdown). Stopping a stopped server is a no-op.
func (m *MariaDB) Stop(ctx context.Context) error {
	return m.signal(ctx, syscall.SIGTERM, 60*time.Second)
}

// Kill stops the server the way a crash would (SIGKILL; the next Start recovers InnoDB).
func (m *MariaDB) Kill(ctx context.Context) error {
	return m.signal(ctx, syscall.SIGKILL, 30*time.Second)
}

func (m *MariaDB) signal(ctx context.Context, sig syscall.Signal, wait time.Duration) error {
	pid := readPidFile(m.pidPath)
	if pid <= 0 || processGone(pid) {
		return nil
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("devstack: mariadb: %v: %w", sig, err)
	}
	if !waitGone(ctx, pid, wait) {
		return withLogs(fmt.Errorf("devstack: mariadb: still running %s after %v", wait, sig), m.logPath)
	}
	_ = os.Remove(m.pidPath)
	// The process is a zombie as soon as its main thread ends; its other threads may still hold
	// the listening socket a moment longer.
	for deadline := time.Now().Add(10 * time.Second); !portFree(m.port) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Running reports whether the server's process is alive.
func (m *MariaDB) Running() bool {
	pid := readPidFile(m.pidPath)
	return pid > 0 && !processGone(pid)
}

// client runs SQL as root through the server's socket.
func (m *MariaDB) client(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := run(exec.CommandContext(ctx, mariadbBin("mariadb"), "--no-defaults", "-S", m.sock, "-u", "root", "-e", sql))
	return err
}

// writeConfig writes my.cnf (every setting devstack owns; the host's /etc/mysql is not read) and
// records the port for OpenMariaDB. The buffer pool holds a 5,000,000-row outbox's index (InnoDB
// reads with O_DIRECT: no page cache behind it, unlike PostgreSQL), and the adaptive hash index is
// on, as MySQL 8 has it by default (MariaDB 10.5+ turned it off): a row looked up by its primary key
// again and again — the overview's PROCESSING rows — costs a hash probe, not a B-tree descent.
func (m *MariaDB) writeConfig() error {
	if err := os.MkdirAll(m.data, 0o755); err != nil {
		return fmt.Errorf("devstack: mariadb: %w", err)
	}
	conf := fmt.Sprintf(`# written by devstack; rewritten at every StartMariaDB
[mysqld]
datadir = %s
socket = %s
pid-file = %s
log-error = %s
port = %d
bind-address = 127.0.0.1
skip-name-resolve
skip-log-bin
innodb-flush-log-at-trx-commit = 2
innodb-buffer-pool-size = 1G
innodb-adaptive-hash-index = ON
max-connections = 500
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
`, m.data, m.sock, m.pidPath, m.logPath, m.port)
	if err := os.WriteFile(m.cnf, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("devstack: mariadb: %w", err)
	}
	st, _ := json.Marshal(mariadbState{Port: m.port})
	if err := os.WriteFile(filepath.Join(m.dir, mariadbStateFile), st, 0o644); err != nil {
		return fmt.Errorf("devstack: mariadb: %w", err)
	}
	return nil
}

// mariadbBin is the path of one of MariaDB's programs: on PATH, or where Debian puts it (mariadbd
// is in /usr/sbin, which a user's PATH may lack).
func mariadbBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin"} {
		if p := filepath.Join(d, name); fileExists(p) {
			return p
		}
	}
	return name
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// mariadbBinaries makes sure mariadbd, mariadb-install-db and the mariadb client are installed.
func mariadbBinaries(ctx context.Context) error {
	have := func() bool {
		for _, b := range []string{"mariadbd", "mariadb-install-db", "mariadb"} {
			if _, err := exec.LookPath(mariadbBin(b)); err != nil {
				return false
			}
		}
		return true
	}
	if have() {
		return nil
	}
	start := time.Now()
	if err := aptInstall(ctx, "mariadb-server", "mariadb-client"); err != nil {
		return fmt.Errorf("devstack: mariadb: %w", err)
	}
	if !have() {
		return errors.New("devstack: mariadb: mariadb-server installed but mariadbd, mariadb-install-db or mariadb is not on PATH")
	}
	fmt.Fprintf(os.Stderr, "devstack: installed mariadb-server in %s\n", time.Since(start).Round(time.Second))
	return nil
}
