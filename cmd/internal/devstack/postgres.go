package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PostgresOptions configures StartPostgres.
type PostgresOptions struct {
	// Dir holds the cluster: data/ (PGDATA), server.log, the Unix socket
	// and devstack-postgres.json. Required. It is created if missing and,
	// when running as root, chowned to the postgres user. A Dir that
	// already holds a cluster is reused (initdb is skipped).
	Dir string
	// Port to listen on (127.0.0.1 only). 0 picks a free port, preferring
	// the one recorded in Dir by an earlier start.
	Port int
	// BinDir holds initdb, pg_ctl and postgres. "" = the newest
	// /usr/lib/postgresql/*/bin (version 15 or newer), installing
	// postgresql-15 with apt-get first if there is none and we are root.
	BinDir string
}

// Postgres is a private PostgreSQL cluster started by StartPostgres (or
// opened with OpenPostgres). Its methods are not safe for concurrent use.
type Postgres struct {
	dir, data, bin, logPath string
	port                    int
	cred                    *syscall.Credential // nil: run as ourselves
}

type postgresState struct {
	Port   int    `json:"port"`
	BinDir string `json:"bin_dir"`
}

const postgresStateFile = "devstack-postgres.json"

// StartPostgres initialises (if needed) and starts a PostgreSQL cluster in
// opts.Dir listening on 127.0.0.1 only, with fsync off and trust
// authentication for the `postgres` superuser. As root it runs the server
// as the postgres user, since PostgreSQL refuses to run as root.
func StartPostgres(ctx context.Context, opts PostgresOptions) (*Postgres, error) {
	dir, err := serviceDir("postgres", opts.Dir)
	if err != nil {
		return nil, err
	}
	bin := opts.BinDir
	if bin == "" {
		if bin, err = postgresBinDir(ctx); err != nil {
			return nil, err
		}
	}
	p := &Postgres{dir: dir, data: filepath.Join(dir, "data"), bin: bin, logPath: filepath.Join(dir, "server.log")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("devstack: postgres: PostgreSQL refuses to run as root and there is no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if opts.Port != 0 && !portFree(opts.Port) {
		return nil, fmt.Errorf("devstack: postgres: port 127.0.0.1:%d is already in use", opts.Port)
	}
	if err := p.prepareDir(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(p.data, "PG_VERSION")); err != nil {
		if _, err := run(p.command(ctx, "initdb", "-D", p.data, "-U", "postgres", "-A", "trust",
			"-E", "UTF8", "--no-locale", "--no-sync")); err != nil {
			return nil, fmt.Errorf("devstack: postgres: initdb: %w", err)
		}
	} else if p.running() {
		return nil, fmt.Errorf("devstack: postgres: a server is already running in %s (postmaster.pid exists); stop it first", p.data)
	}

	port := opts.Port
	for attempt := 1; ; attempt++ {
		if opts.Port == 0 {
			// A Dir used before keeps its port while it is free.
			prev, err := OpenPostgres(dir)
			if attempt == 1 && err == nil && prev.port != 0 && portFree(prev.port) {
				port = prev.port
			} else if port, err = FreePort(); err != nil {
				return nil, err
			}
		} else if !portFree(port) {
			return nil, fmt.Errorf("devstack: postgres: port 127.0.0.1:%d is already in use", port)
		}
		p.port = port
		if err := p.writeConfig(); err != nil {
			return nil, err
		}
		err := p.Start(ctx)
		if err == nil {
			return p, nil
		}
		// Someone else took the free port between our check and the bind.
		if opts.Port == 0 && attempt < 3 && strings.Contains(tailFile(p.logPath, 20), "could not bind") {
			continue
		}
		return nil, err
	}
}

// OpenPostgres returns a handle on a cluster that StartPostgres created in
// dir (typically by another process, e.g. `devstack up`), so that it can be
// stopped or restarted.
func OpenPostgres(dir string) (*Postgres, error) {
	dir, st, err := readState[postgresState](dir, postgresStateFile, "postgres: no cluster")
	if err != nil {
		return nil, err
	}
	p := &Postgres{dir: dir, data: filepath.Join(dir, "data"), bin: st.BinDir, logPath: filepath.Join(dir, "server.log"), port: st.Port}
	if os.Geteuid() == 0 {
		if u, err := user.Lookup("postgres"); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		}
	}
	return p, nil
}

// DSN returns the connection URL for database db as the postgres superuser.
func (p *Postgres) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, db)
}

// Port is the TCP port on 127.0.0.1.
func (p *Postgres) Port() int { return p.port }

// Dir is the cluster's directory (opts.Dir made absolute).
func (p *Postgres) Dir() string { return p.dir }

// LogPath is the server log.
func (p *Postgres) LogPath() string { return p.logPath }

// Start starts the server again after Stop or Kill, on the same port and
// data directory. StartPostgres already calls it.
func (p *Postgres) Start(ctx context.Context) error {
	if p.running() {
		return nil
	}
	if !portFree(p.port) {
		return fmt.Errorf("devstack: postgres: port 127.0.0.1:%d is already in use", p.port)
	}
	if _, err := run(p.command(ctx, "pg_ctl", "-D", p.data, "-l", p.logPath, "-w", "-t", "60", "start")); err != nil {
		// Do not leave a half-started postmaster behind.
		if p.running() {
			_, _ = run(p.command(context.Background(), "pg_ctl", "-D", p.data, "-m", "immediate", "-w", "-t", "30", "stop"))
		}
		return withLogs(fmt.Errorf("devstack: postgres: start on port %d: %w", p.port, err), p.logPath)
	}
	return nil
}

// Stop shuts the server down (pg_ctl -m fast: active sessions are
// disconnected, data is checkpointed). Stopping a stopped server is a no-op.
func (p *Postgres) Stop(ctx context.Context) error { return p.stop(ctx, "fast") }

// Kill stops the server the way a crash would (pg_ctl -m immediate: no
// checkpoint; the next Start runs crash recovery). For tests of a
// dependency that goes away under a running console.
func (p *Postgres) Kill(ctx context.Context) error { return p.stop(ctx, "immediate") }

func (p *Postgres) stop(ctx context.Context, mode string) error {
	if !p.running() {
		return nil
	}
	if _, err := run(p.command(ctx, "pg_ctl", "-D", p.data, "-m", mode, "-w", "-t", "60", "stop")); err != nil {
		if !p.running() {
			return nil
		}
		return withLogs(fmt.Errorf("devstack: postgres: stop (%s): %w", mode, err), p.logPath)
	}
	return nil
}

// Running reports whether the postmaster is alive.
func (p *Postgres) Running() bool { return p.running() }

func (p *Postgres) running() bool {
	pid := p.postmaster()
	return pid > 0 && !processGone(pid)
}

// postmaster is the pid the cluster's postmaster.pid names (0 if there is none).
func (p *Postgres) postmaster() int { return readPidFile(filepath.Join(p.data, "postmaster.pid")) }

// Processes are the postmaster and its children (the backends that hold clients' connections, and
// the server's own workers), for a test that freezes the server with SIGSTOP; none when the
// cluster is not running.
func (p *Postgres) Processes() []int {
	master := p.postmaster()
	if master <= 0 || processGone(master) {
		return nil
	}
	pids := []int{master}
	for _, pid := range processes() {
		if _, ppid, err := procStat(pid); err == nil && ppid == strconv.Itoa(master) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// command builds an exec.Cmd for a PostgreSQL binary, run as the postgres
// user when we are root, in its own process group so that a Ctrl-C aimed
// at the caller's terminal does not reach the server.
func (p *Postgres) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	env := []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH"), "HOME=" + p.dir}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: p.cred}
	return cmd
}

// prepareDir creates dir, hands it to the postgres user and makes sure that
// user can reach it: t.TempDir() and mktemp -d make 0700 root-owned folders.
func (p *Postgres) prepareDir() error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("devstack: postgres: %w", err)
	}
	if p.cred == nil {
		return nil
	}
	if err := os.Chmod(p.dir, 0o755); err != nil {
		return fmt.Errorf("devstack: postgres: %w", err)
	}
	if err := os.Chown(p.dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
		return fmt.Errorf("devstack: postgres: %w", err)
	}
	for d := filepath.Dir(p.dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("devstack: postgres: %w", err)
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		traversable := fi.Mode().Perm()&0o001 != 0 ||
			(st != nil && st.Uid == p.cred.Uid && fi.Mode().Perm()&0o100 != 0) ||
			(st != nil && st.Gid == p.cred.Gid && fi.Mode().Perm()&0o010 != 0)
		if !traversable {
			// Add search (x) permission only: the postgres user can then
			// pass through d to the cluster but not list d. Say so when it
			// is not a temporary folder (e.g. a checkout under /root).
			if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("devstack: postgres: the postgres user cannot enter %s (mode %v): %w", d, fi.Mode().Perm(), err)
			}
			if tmp, _ := filepath.Abs(os.TempDir()); !strings.HasPrefix(d, tmp+string(filepath.Separator)) {
				fmt.Fprintf(os.Stderr, "devstack: chmod go+x %s so that the postgres user can reach %s\n", d, p.dir)
			}
		}
		if d == "/" || d == filepath.Dir(d) {
			return nil
		}
	}
}

// writeConfig writes the settings devstack owns into data/devstack.conf,
// included from postgresql.conf, and records the port for OpenPostgres.
// fsync is off (only an OS crash could lose data), but synchronous_commit
// stays on so that a committed transaction survives Kill, as it would a
// real server crash.
func (p *Postgres) writeConfig() error {
	sock := p.dir
	if len(sock)+len("/.s.PGSQL.65535.lock") > 100 { // sun_path limit is 108
		sock = ""
	}
	conf := fmt.Sprintf(`# written by devstack; rewritten at every StartPostgres
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
fsync = off
full_page_writes = off
max_connections = 200
`, p.port, strings.ReplaceAll(sock, "'", "''"))
	path := filepath.Join(p.data, "devstack.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("devstack: postgres: %w", err)
	}
	if p.cred != nil {
		if err := os.Chown(path, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return fmt.Errorf("devstack: postgres: %w", err)
		}
	}
	main := filepath.Join(p.data, "postgresql.conf")
	b, err := os.ReadFile(main)
	if err != nil {
		return fmt.Errorf("devstack: postgres: %w", err)
	}
	const include = "include_if_exists = 'devstack.conf'"
	if !strings.Contains(string(b), include) {
		f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("devstack: postgres: %w", err)
		}
		_, err = fmt.Fprintf(f, "\n%s\n", include)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("devstack: postgres: %w", err)
		}
	}
	st, _ := json.Marshal(postgresState{Port: p.port, BinDir: p.bin})
	if err := os.WriteFile(filepath.Join(p.dir, postgresStateFile), st, 0o644); err != nil {
		return fmt.Errorf("devstack: postgres: %w", err)
	}
	return nil
}

// postgresBinDir finds the newest /usr/lib/postgresql/<major>/bin with
// major >= 15, installing postgresql-15 when there is none.
func postgresBinDir(ctx context.Context) (string, error) {
	find := func() string {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		type cand struct {
			major int
			dir   string
		}
		var cs []cand
		for _, m := range matches {
			dir := filepath.Dir(m)
			major, err := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
			if err != nil || major < 15 {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err != nil {
				continue
			}
			cs = append(cs, cand{major, dir})
		}
		if len(cs) == 0 {
			return ""
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].major > cs[j].major })
		return cs[0].dir
	}
	if d := find(); d != "" {
		return d, nil
	}
	start := time.Now()
	if err := aptInstall(ctx, "postgresql-15"); err != nil {
		return "", fmt.Errorf("devstack: postgres: no /usr/lib/postgresql/*/bin/initdb (15 or newer): %w", err)
	}
	if d := find(); d != "" {
		fmt.Fprintf(os.Stderr, "devstack: installed postgresql-15 in %s\n", time.Since(start).Round(time.Second))
		return d, nil
	}
	return "", errors.New("devstack: postgres: postgresql-15 installed but no /usr/lib/postgresql/*/bin/initdb found")
}
