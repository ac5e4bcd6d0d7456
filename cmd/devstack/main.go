// Command devstack runs the real services Redrive's tests and demo use —
// PostgreSQL, MariaDB, RabbitMQ 3.10 and 4.0 and a Kafka-protocol broker
// (kfake) — privately on loopback.
//
//	devstack run [--dir D] [--keep] -- CMD ARGS...   install the tests' tools when missing (below), start
//	                                                 PostgreSQL, MariaDB and both RabbitMQ nodes, run
//	                                                 CMD with the services' variables set (below),
//	                                                 tear down, exit with CMD's status
//	devstack up [--dir D]                            start them, write D/env, leave them running
//	devstack down [--dir D] [--purge]                stop what `up` started (and its epmds)
//	devstack kafka [--addr A] [--topic T:N]...       run a standalone kfake until interrupted
//
// The variables: REDRIVE_TEST_PG_DSN; REDRIVE_TEST_MYSQL_DSN (MariaDB 10.11,
// a mysql:// URL of an account with every right; --no-mariadb skips it);
// REDRIVE_TEST_AMQP_URL and
// REDRIVE_TEST_RABBIT_MGMT_URL (RabbitMQ 3.10, the host's);
// REDRIVE_TEST_AMQP_URL_RABBITMQ4 and REDRIVE_TEST_RABBIT_MGMT_URL_RABBITMQ4
// (RabbitMQ 4.0, run chrooted in a Debian 13 root that the first run builds
// in ~/.cache/redrive, about 3 min; --no-rabbitmq4 skips it). Both nodes
// have the user guest/guest.
//
// Before it starts the services, run installs with apt-get (as root; otherwise it fails naming
// the exact command) what the tests use beside them: python3-confluent-kafka, python3-requests,
// python3-jsonschema, python3-protobuf and python3-avro (the Schema Registry cross-checks),
// chromium and chromium-driver (the browser tests) and kcat; --no-tools skips that.
//
// `make test` is `go run ./cmd/devstack run -- make test-go test-rabbitmq4 fuzz`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redrive/redrive/cmd/internal/devstack"
)

const usage = `usage:
  devstack run [--dir D] [--keep] [--no-tools] [--no-postgres] [--no-mariadb] [--no-rabbitmq] [--no-rabbitmq4] [ports] -- CMD ARGS...
  devstack up [--dir D] [--no-postgres] [--no-mariadb] [--no-rabbitmq] [--no-rabbitmq4] [ports]
  devstack down [--dir D] [--purge]
  devstack ctl [--dir D] [--rabbitmq4] -- RABBITMQCTL-ARGS...
  devstack kafka [--addr 127.0.0.1:19092] [--topic NAME:PARTITIONS]... [--data-dir D]
ports: --pg-port N --amqp-port N --mgmt-port N (RabbitMQ 3.10's; 0 = a free port, the default;
RabbitMQ 4.0 always takes free ports)
run and up export REDRIVE_TEST_PG_DSN, REDRIVE_TEST_MYSQL_DSN (MariaDB, a mysql:// URL),
REDRIVE_TEST_AMQP_URL, REDRIVE_TEST_RABBIT_MGMT_URL
(RabbitMQ 3.10), REDRIVE_TEST_AMQP_URL_RABBITMQ4 and REDRIVE_TEST_RABBIT_MGMT_URL_RABBITMQ4
(RabbitMQ 4.0, chrooted in a Debian 13 root that the first run builds, about 3 min, in
${REDRIVE_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/redrive}).
ctl runs rabbitmqctl against a node that up started (in its root, for RabbitMQ 4.0), e.g.
  devstack ctl --dir D --rabbitmq4 -- eval 'erlang:system_info(otp_release).'
Run "devstack COMMAND -h" for a command's flags.
`

func main() {
	log := func(format string, a ...any) {
		// Errors from the devstack package already say "devstack: ".
		fmt.Fprintln(os.Stderr, "devstack: "+strings.TrimPrefix(fmt.Sprintf(format, a...), "devstack: "))
	}
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var code int
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run":
		code = cmdRun(args, log)
	case "up":
		code = cmdUp(args, log)
	case "down":
		code = cmdDown(args, log)
	case "ctl":
		code = cmdCtl(args, log)
	case "kafka":
		code = cmdKafka(args, log)
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "devstack: unknown command %q\n%s", cmd, usage)
		code = 2
	}
	os.Exit(code)
}

type logFn func(format string, a ...any)

// stackFlags are the flags shared by run and up.
type stackFlags struct {
	dir                                        string
	noPostgres, noMariaDB, noRabbit, noRabbit4 bool
	pgPort, amqpPort, mgmtPrt                  int
}

func (s *stackFlags) register(fs *flag.FlagSet, defaultDir string) {
	fs.StringVar(&s.dir, "dir", defaultDir, "directory for the services' data and logs")
	fs.BoolVar(&s.noPostgres, "no-postgres", false, "do not start PostgreSQL")
	fs.BoolVar(&s.noMariaDB, "no-mariadb", false, "do not start MariaDB")
	fs.BoolVar(&s.noRabbit, "no-rabbitmq", false, "do not start RabbitMQ 3.10")
	fs.BoolVar(&s.noRabbit4, "no-rabbitmq4", false, "do not start RabbitMQ 4.0")
	fs.IntVar(&s.pgPort, "pg-port", 0, "PostgreSQL port on 127.0.0.1 (0 = free port)")
	fs.IntVar(&s.amqpPort, "amqp-port", 0, "RabbitMQ AMQP port on 127.0.0.1 (0 = free port)")
	fs.IntVar(&s.mgmtPrt, "mgmt-port", 0, "RabbitMQ management port on 127.0.0.1 (0 = free port)")
}

type stack struct {
	pg      *devstack.Postgres
	mariadb *devstack.MariaDB
	rabbit  *devstack.RabbitMQ // 3.10, the host's
	rabbit4 *devstack.RabbitMQ // 4.0, in the Debian 13 root
}

// The services' folders in --dir.
const (
	postgresDir = "postgres"
	mariadbDir  = "mariadb"
	rabbitDir   = "rabbitmq"
	rabbit4Dir  = "rabbitmq4"
)

// env is what the services export to the programs that use them.
func (s *stack) env() []string {
	var env []string
	if s.pg != nil {
		env = append(env, "REDRIVE_TEST_PG_DSN="+s.pg.DSN("postgres"))
	}
	if s.mariadb != nil {
		env = append(env, "REDRIVE_TEST_MYSQL_DSN="+s.mariadb.DSN("mysql"))
	}
	if s.rabbit != nil {
		env = append(env, "REDRIVE_TEST_AMQP_URL="+s.rabbit.URL(), "REDRIVE_TEST_RABBIT_MGMT_URL="+s.rabbit.ManagementURL())
	}
	if s.rabbit4 != nil {
		env = append(env, "REDRIVE_TEST_AMQP_URL_RABBITMQ4="+s.rabbit4.URL(), "REDRIVE_TEST_RABBIT_MGMT_URL_RABBITMQ4="+s.rabbit4.ManagementURL())
	}
	return env
}

// rabbits are the RabbitMQ nodes of the stack.
func (s *stack) rabbits() []*devstack.RabbitMQ {
	var rs []*devstack.RabbitMQ
	for _, r := range []*devstack.RabbitMQ{s.rabbit, s.rabbit4} {
		if r != nil {
			rs = append(rs, r)
		}
	}
	return rs
}

// start starts the services in parallel (RabbitMQ 3.10 takes ~8 s, 4.0
// ~10 s, or ~3 min more the first time on a machine, to build its root;
// PostgreSQL and MariaDB ~1 s). On error, whatever did start is stopped
// again.
func start(ctx context.Context, f stackFlags, log logFn) (*stack, error) {
	var (
		s                        stack
		wg                       sync.WaitGroup
		pgErr, mErr, rErr, r4Err error
	)
	t0 := time.Now()
	if !f.noPostgres {
		wg.Go(func() {
			s.pg, pgErr = devstack.StartPostgres(ctx, devstack.PostgresOptions{Dir: filepath.Join(f.dir, postgresDir), Port: f.pgPort})
			if pgErr == nil {
				log("postgres ready on 127.0.0.1:%d in %s", s.pg.Port(), time.Since(t0).Round(10*time.Millisecond))
			}
		})
	}
	if !f.noMariaDB {
		wg.Go(func() {
			s.mariadb, mErr = devstack.StartMariaDB(ctx, devstack.MariaDBOptions{Dir: filepath.Join(f.dir, mariadbDir)})
			if mErr == nil {
				log("mariadb ready on 127.0.0.1:%d in %s", s.mariadb.Port(), time.Since(t0).Round(10*time.Millisecond))
			} else {
				mErr = fmt.Errorf("%w (--no-mariadb skips it)", mErr)
			}
		})
	}
	if !f.noRabbit {
		wg.Go(func() {
			s.rabbit, rErr = devstack.StartRabbitMQ(ctx, devstack.RabbitOptions{Dir: filepath.Join(f.dir, rabbitDir), AMQPPort: f.amqpPort, ManagementPort: f.mgmtPrt})
			if rErr == nil {
				log("rabbitmq 3.10 ready on 127.0.0.1:%d (management %d) in %s", s.rabbit.AMQPPort(), s.rabbit.ManagementPort(), time.Since(t0).Round(10*time.Millisecond))
			}
		})
	}
	if !f.noRabbit4 {
		wg.Go(func() {
			root, err := devstack.RabbitMQ4Root(ctx)
			if err != nil {
				r4Err = fmt.Errorf("rabbitmq 4.0: %w (--no-rabbitmq4 skips it)", err)
				return
			}
			s.rabbit4, r4Err = devstack.StartRabbitMQ(ctx, devstack.RabbitOptions{Dir: filepath.Join(f.dir, rabbit4Dir), Root: root})
			if r4Err == nil {
				log("rabbitmq 4.0 ready on 127.0.0.1:%d (management %d) in %s", s.rabbit4.AMQPPort(), s.rabbit4.ManagementPort(), time.Since(t0).Round(10*time.Millisecond))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(pgErr, mErr, rErr, r4Err); err != nil {
		s.stop(log, false)
		return nil, err
	}
	return &s, nil
}

// stop stops the services in parallel and reports errors. With discard
// (their data is about to be deleted) RabbitMQ is killed rather than shut
// down: RabbitMQ 3.10 spends 5 s of its ~6 s graceful stop in a fixed wait
// of the management agent (rabbitmq-server#11070, fixed in 3.13).
func (s *stack) stop(log logFn, discard bool) bool {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := true
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		log("%v", err)
		ok = false
	}
	if s.pg != nil {
		wg.Go(func() {
			if err := s.pg.Stop(ctx); err != nil {
				fail(err)
			}
		})
	}
	if s.mariadb != nil {
		wg.Go(func() {
			stop := s.mariadb.Stop
			if discard {
				stop = s.mariadb.Kill
			}
			if err := stop(ctx); err != nil {
				fail(err)
			}
		})
	}
	for _, r := range s.rabbits() {
		wg.Go(func() {
			stop := r.Stop
			if discard {
				stop = r.Kill
			}
			if err := stop(ctx); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	if s.pg != nil || s.mariadb != nil || len(s.rabbits()) > 0 {
		log("stopped in %s", time.Since(t0).Round(10*time.Millisecond))
	}
	return ok
}

func mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// mktemp-style folders are 0700; the postgres user must enter it.
	return os.Chmod(dir, 0o755)
}

func cmdRun(args []string, log logFn) int {
	fs := flag.NewFlagSet("devstack run", flag.ContinueOnError)
	var f stackFlags
	f.register(fs, "")
	keep := fs.Bool("keep", false, "keep the directory (a temporary --dir is removed otherwise)")
	noTools := fs.Bool("no-tools", false, "do not check for (or install) the tests' other tools: the Python cross-check encoders, chromium, chromium-driver, kcat")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: devstack run [flags] -- CMD ARGS...\n\nStarts PostgreSQL, MariaDB, RabbitMQ 3.10 and RabbitMQ 4.0, runs CMD with REDRIVE_TEST_PG_DSN,\nREDRIVE_TEST_MYSQL_DSN, REDRIVE_TEST_AMQP_URL, REDRIVE_TEST_RABBIT_MGMT_URL, REDRIVE_TEST_AMQP_URL_RABBITMQ4 and\nREDRIVE_TEST_RABBIT_MGMT_URL_RABBITMQ4 set, stops them, and exits with CMD's status.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fs.Usage()
		return 2
	}

	// Signals: during startup they abort it; while CMD runs they are passed
	// on to it; during teardown they are ignored so that cleanup finishes.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopWatch := make(chan struct{})
	watched := make(chan os.Signal, 1)
	go func() {
		select {
		case sig := <-sigs:
			log("%v: aborting startup", sig)
			cancel()
			watched <- sig
		case <-stopWatch:
			watched <- nil
		}
	}()

	discard := false
	if f.dir == "" {
		discard = !*keep
		d, err := os.MkdirTemp("", "redrive-devstack-")
		if err != nil {
			log("%v", err)
			return 1
		}
		f.dir = d
		if !*keep {
			defer os.RemoveAll(d)
		}
	}
	if err := mkdir(f.dir); err != nil {
		log("%v", err)
		return 1
	}
	// The tools the tests use beside the services, before the services (one apt-get at a time).
	if !*noTools {
		installed, err := devstack.TestTools(ctx)
		if err != nil {
			close(stopWatch)
			<-watched
			log("%v (--no-tools skips this check)", err)
			return 1
		}
		if len(installed) > 0 {
			log("installed %s", strings.Join(installed, " "))
		}
	}
	s, err := start(ctx, f, log)
	close(stopWatch)
	interrupted := <-watched
	if err != nil {
		if interrupted != nil {
			log("startup aborted")
			return 128 + int(interrupted.(syscall.Signal))
		}
		log("%v", err)
		return 1
	}
	if interrupted != nil {
		s.stop(log, discard)
		return 128 + int(interrupted.(syscall.Signal))
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), s.env()...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := 0
	if err := cmd.Start(); err != nil {
		log("%v", err)
		code = 127
	} else {
		done := make(chan struct{})
		go func() {
			for {
				select {
				case sig := <-sigs:
					_ = cmd.Process.Signal(sig)
				case <-done:
					return
				}
			}
		}()
		err := cmd.Wait()
		close(done)
		code = exitCode(cmd, err, log)
	}
	if !s.stop(log, discard) && code == 0 {
		code = 1
	}
	if *keep {
		log("kept %s", f.dir)
	}
	return code
}

func exitCode(cmd *exec.Cmd, err error, log logFn) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		log("%v", err)
		return 1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

func defaultUpDir() string { return filepath.Join(os.TempDir(), "redrive-devstack") }

func cmdUp(args []string, log logFn) int {
	fs := flag.NewFlagSet("devstack up", flag.ContinueOnError)
	var f stackFlags
	f.register(fs, defaultUpDir())
	if err := fs.Parse(args); err != nil {
		return 2
	}
	dir, err := filepath.Abs(f.dir)
	if err != nil {
		log("%v", err)
		return 1
	}
	f.dir = dir
	if err := mkdir(dir); err != nil {
		log("%v", err)
		return 1
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	// Idempotent: services already running in dir are reused.
	var s stack
	if !f.noPostgres {
		if pg, err := devstack.OpenPostgres(filepath.Join(dir, postgresDir)); err == nil && pg.Running() {
			log("postgres already running on 127.0.0.1:%d", pg.Port())
			s.pg, f.noPostgres = pg, true
		}
	}
	if !f.noMariaDB {
		if m, err := devstack.OpenMariaDB(filepath.Join(dir, mariadbDir)); err == nil && m.Running() {
			log("mariadb already running on 127.0.0.1:%d", m.Port())
			s.mariadb, f.noMariaDB = m, true
		}
	}
	if !f.noRabbit {
		if r, err := devstack.OpenRabbitMQ(filepath.Join(dir, rabbitDir)); err == nil && r.Running() {
			log("rabbitmq 3.10 already running on 127.0.0.1:%d", r.AMQPPort())
			s.rabbit, f.noRabbit = r, true
		}
	}
	if !f.noRabbit4 {
		if r, err := devstack.OpenRabbitMQ(filepath.Join(dir, rabbit4Dir)); err == nil && r.Running() {
			log("rabbitmq 4.0 already running on 127.0.0.1:%d", r.AMQPPort())
			s.rabbit4, f.noRabbit4 = r, true
		}
	}
	started, err := start(ctx, f, log)
	if err != nil {
		log("%v", err)
		return 1
	}
	if started.pg != nil {
		s.pg = started.pg
	}
	if started.mariadb != nil {
		s.mariadb = started.mariadb
	}
	if started.rabbit != nil {
		s.rabbit = started.rabbit
	}
	if started.rabbit4 != nil {
		s.rabbit4 = started.rabbit4
	}
	var b strings.Builder
	for _, kv := range s.env() {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	envFile := filepath.Join(dir, "env")
	if err := os.WriteFile(envFile, []byte(b.String()), 0o644); err != nil {
		log("%v", err)
		return 1
	}
	fmt.Print(b.String())
	log("wrote %s (source it); stop with: devstack down --dir %s", envFile, dir)
	return 0
}

// cmdCtl runs rabbitmqctl against one of the nodes up started, in the node's environment (its
// cookie, its EPMD port, its root): what a benchmark's hook or a person needs to look inside the
// node, e.g. its processes' work (docs/benchmarks.md).
func cmdCtl(args []string, log logFn) int {
	fs := flag.NewFlagSet("devstack ctl", flag.ContinueOnError)
	dirFlag := fs.String("dir", defaultUpDir(), "directory given to devstack up")
	four := fs.Bool("rabbitmq4", false, "the RabbitMQ 4.0 node (default: 3.10)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		log("ctl: name rabbitmqctl's arguments after --, e.g. devstack ctl -- list_queues")
		return 2
	}
	sub := rabbitDir
	if *four {
		sub = rabbit4Dir
	}
	r, err := devstack.OpenRabbitMQ(filepath.Join(*dirFlag, sub))
	if err != nil {
		log("ctl: no RabbitMQ node in %s: %v", filepath.Join(*dirFlag, sub), err)
		return 1
	}
	out, err := r.Ctl(context.Background(), fs.Args()...)
	fmt.Print(out)
	if err != nil {
		log("ctl: %v", err)
		return 1
	}
	return 0
}

func cmdDown(args []string, log logFn) int {
	fs := flag.NewFlagSet("devstack down", flag.ContinueOnError)
	dirFlag := fs.String("dir", defaultUpDir(), "directory given to devstack up")
	purge := fs.Bool("purge", false, "remove the directory afterwards")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	dir, err := filepath.Abs(*dirFlag)
	if err != nil {
		log("%v", err)
		return 1
	}
	var s stack
	if pg, err := devstack.OpenPostgres(filepath.Join(dir, postgresDir)); err == nil {
		s.pg = pg
	}
	if m, err := devstack.OpenMariaDB(filepath.Join(dir, mariadbDir)); err == nil {
		s.mariadb = m
	}
	if r, err := devstack.OpenRabbitMQ(filepath.Join(dir, rabbitDir)); err == nil {
		s.rabbit = r
	}
	if r, err := devstack.OpenRabbitMQ(filepath.Join(dir, rabbit4Dir)); err == nil {
		s.rabbit4 = r
	}
	if s.pg == nil && s.mariadb == nil && len(s.rabbits()) == 0 {
		log("nothing started in %s", dir)
	}
	ok := s.stop(log, false)
	_ = os.Remove(filepath.Join(dir, "env"))
	if *purge && ok {
		if err := os.RemoveAll(dir); err != nil {
			log("%v", err)
			return 1
		}
	}
	if !ok {
		return 1
	}
	return 0
}

func cmdKafka(args []string, log logFn) int {
	fs := flag.NewFlagSet("devstack kafka", flag.ContinueOnError)
	addr := fs.String("addr", devstack.DefaultKafkaAddr, "host:port to listen on (port 0 = free port)")
	dataDir := fs.String("data-dir", "", "persist data here across restarts (default: in memory)")
	noAuto := fs.Bool("no-auto-create", false, "disable automatic topic creation")
	topics := map[string]int32{}
	fs.Func("topic", "create topic NAME:PARTITIONS at start (repeatable; NAME alone = 1 partition)", func(v string) error {
		name, parts, found := strings.Cut(v, ":")
		if name == "" {
			return errors.New("empty topic name")
		}
		n := 1
		if found {
			var err error
			if n, err = strconv.Atoi(parts); err != nil || n < 1 {
				return fmt.Errorf("bad partition count %q", parts)
			}
		}
		topics[name] = int32(n)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		log("unexpected arguments %q", fs.Args())
		return 2
	}
	k, err := devstack.StartKafka(devstack.KafkaOptions{Addr: *addr, Topics: topics, DataDir: *dataDir,
		DisableAutoTopicCreation: *noAuto, Log: os.Stderr})
	if err != nil {
		log("%v", err)
		return 1
	}
	names := make([]string, 0, len(topics))
	for n, p := range topics {
		names = append(names, fmt.Sprintf("%s:%d", n, p))
	}
	sort.Strings(names)
	log("kafka (kfake) listening on %s; topics %v; Ctrl-C to stop", strings.Join(k.Addrs(), ","), names)
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	<-ctx.Done()
	k.Close()
	log("kafka stopped")
	return 0
}
