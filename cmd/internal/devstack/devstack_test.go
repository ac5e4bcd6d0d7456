package devstack

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests start their own services; they do not use the
// REDRIVE_TEST_* variables that `devstack run` exports.

func skipWithoutServices(t *testing.T, binGlob string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real services; skipped with -short")
	}
	if m, _ := filepath.Glob(binGlob); len(m) == 0 && os.Geteuid() != 0 {
		t.Skipf("%s missing and not root (cannot apt-get install)", binGlob)
	}
}

// stopAtCleanup stops the service s (a Postgres or a RabbitMQ) when the test ends, failing the
// test if it cannot.
func stopAtCleanup(t *testing.T, s interface{ Stop(context.Context) error }) {
	t.Helper()
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

func pgSelect1(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

func TestPostgresStartKillRestart(t *testing.T) {
	skipWithoutServices(t, "/usr/lib/postgresql/*/bin/initdb")
	t.Parallel()
	ctx := context.Background()

	start := time.Now()
	pg, err := StartPostgres(ctx, PostgresOptions{Dir: filepath.Join(t.TempDir(), "pg")})
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, pg)
	t.Logf("postgres ready on port %d in %s", pg.Port(), time.Since(start))
	if err := pgSelect1(ctx, pg.DSN("postgres")); err != nil {
		t.Fatalf("SELECT 1: %v", err)
	}
	port := pg.Port()

	// Create a table so that the restart is seen to keep the data.
	conn, err := pgx.Connect(ctx, pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}

	// Crash it under an open connection, as a test of a console whose
	// database goes away would.
	if err := pg.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if pg.Running() {
		t.Fatal("Running() after Kill")
	}
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("ping succeeded after Kill")
	}
	conn.Close(ctx)
	if err := pgSelect1(ctx, pg.DSN("postgres")); err == nil {
		t.Fatal("connect succeeded after Kill")
	}

	start = time.Now()
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("postgres restarted in %s", time.Since(start))
	if pg.Port() != port {
		t.Fatalf("port changed: %d → %d", port, pg.Port())
	}
	conn, err = pgx.Connect(ctx, pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: v=%d err=%v", v, err)
	}
	conn.Close(ctx)

	// A graceful stop and start, through a handle opened from the dir as
	// `devstack down` does.
	other, err := OpenPostgres(pg.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if other.Port() != port {
		t.Fatalf("OpenPostgres port %d, want %d", other.Port(), port)
	}
	if err := other.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(ctx); err != nil { // already stopped: no-op
		t.Fatal(err)
	}
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pgSelect1(ctx, pg.DSN("postgres")); err != nil {
		t.Fatalf("SELECT 1 after stop/start: %v", err)
	}
}

func TestPostgresPortInUse(t *testing.T) {
	skipWithoutServices(t, "/usr/lib/postgresql/*/bin/initdb")
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = StartPostgres(context.Background(), PostgresOptions{Dir: t.TempDir(), Port: l.Addr().(*net.TCPAddr).Port})
	if err == nil {
		t.Fatal("StartPostgres on a taken port succeeded")
	}
	t.Log(err)
}

func checkAMQP(t *testing.T, r *RabbitMQ) {
	t.Helper()
	conn, err := amqp.Dial(r.URL())
	if err != nil {
		t.Fatalf("amqp dial %s: %v", r.URL(), err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("devstack-test", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
}

func checkManagement(t *testing.T, r *RabbitMQ) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.ManagementURL()+"/api/overview", nil)
	req.SetBasicAuth("guest", "guest")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/overview: %s", resp.Status)
	}
}

func listening(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func checkStopped(t *testing.T, r *RabbitMQ) {
	t.Helper()
	// A handle that did not stop the node itself sees its wrapper process (this process's child)
	// exit a moment after the node: give it that moment.
	waittest.Until(t, 5*time.Second, "Running() false after Stop", func() bool { return !r.Running() })
	if pids := epmdPids(r.EPMDPort()); len(pids) > 0 {
		t.Fatalf("epmd still running: %v", pids)
	}
	for _, p := range []int{r.AMQPPort(), r.ManagementPort(), r.DistPort(), r.EPMDPort()} {
		if listening(p) {
			t.Fatalf("port %d still listening after Stop", p)
		}
	}
}

func TestRabbitMQStartStopRestart(t *testing.T) {
	skipWithoutServices(t, rabbitBinDir+"/rabbitmq-server")
	t.Parallel()
	ctx := context.Background()

	start := time.Now()
	r, err := StartRabbitMQ(ctx, RabbitOptions{Dir: filepath.Join(t.TempDir(), "rabbit")})
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, r)
	t.Logf("rabbitmq %s ready (amqp %d, management %d, epmd %d) in %s", r.Node(), r.AMQPPort(), r.ManagementPort(), r.EPMDPort(), time.Since(start))
	checkAMQP(t, r)
	checkManagement(t, r)
	if len(epmdPids(r.EPMDPort())) == 0 {
		t.Fatal("no epmd found for the node's epmd port")
	}

	start = time.Now()
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("rabbitmq stopped in %s", time.Since(start))
	checkStopped(t, r)

	// Start again on the same ports; the durable queue is still there.
	start = time.Now()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("rabbitmq restarted in %s", time.Since(start))
	checkAMQP(t, r)
	out, err := r.Ctl(ctx, "list_queues", "name")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "devstack-test") {
		t.Fatalf("queue lost across restart; list_queues:\n%s", out)
	}

	// Crash it, then stop through a handle opened from the dir, as
	// `devstack down` does.
	if err := r.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	checkStopped(t, r)
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	checkManagement(t, r)
	other, err := OpenRabbitMQ(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if !other.Running() {
		t.Fatal("OpenRabbitMQ: not Running()")
	}
	if err := other.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	checkStopped(t, other)
	checkStopped(t, r)
}

// A RabbitMQ 4.0 node runs chrooted in the Debian 13 root (built on the first run, ~3 min), on
// its own epmd, and leaves no process, port or mount behind.
func TestRabbitMQ4StartStop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: a RabbitMQ 4.0 node runs chrooted in a Debian 13 root")
	}
	t.Parallel()
	ctx := context.Background()
	root, err := RabbitMQ4Root(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Another node may run in the root meanwhile (make test's own): its mounts, if any, are not ours.
	mounts := mountsUnder(root)

	start := time.Now()
	r, err := StartRabbitMQ(ctx, RabbitOptions{Dir: filepath.Join(t.TempDir(), "rabbit4"), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, r)
	t.Logf("rabbitmq %s ready in %s (amqp %d, management %d, epmd %d) in %s", r.Node(), root, r.AMQPPort(), r.ManagementPort(), r.EPMDPort(), time.Since(start))
	checkAMQP(t, r)
	if v := rabbitVersion(t, r); !strings.HasPrefix(v, "4.") {
		t.Fatalf("rabbitmq_version %q, want 4.x", v)
	}
	if len(epmdPids(r.EPMDPort())) == 0 {
		t.Fatal("no epmd found for the node's epmd port")
	}
	if got := mountsUnder(root); !slices.Equal(got, mounts) {
		t.Fatalf("mounts under the root while the node runs: %q, before %q: the node's mounts must stay in its own namespace", got, mounts)
	}
	out, err := r.Ctl(ctx, "list_queues", "name") // rabbitmqctl in the root
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "devstack-test") {
		t.Fatalf("list_queues:\n%s", out)
	}

	// Stop through a handle opened from the dir, as `devstack down` does.
	other, err := OpenRabbitMQ(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if other.Root() != root || !other.Running() {
		t.Fatalf("OpenRabbitMQ: root %q, Running %v", other.Root(), other.Running())
	}
	start = time.Now()
	if err := other.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("rabbitmq 4 stopped in %s", time.Since(start))
	checkStopped(t, other)
	checkStopped(t, r)
	if got := mountsUnder(root); !slices.Equal(got, mounts) {
		t.Fatalf("mounts under the root after Stop: %q, before %q", got, mounts)
	}
	if err := r.Stop(ctx); err != nil { // removes the node's mount point once its last process is gone
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, r.nodeDir())); !os.IsNotExist(err) {
		t.Fatalf("the node's mount point %s is left in the root (%v)", r.nodeDir(), err)
	}
}

// rabbitVersion is the management API's overview's rabbitmq_version.
func rabbitVersion(t *testing.T, r *RabbitMQ) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.ManagementURL()+"/api/overview", nil)
	req.SetBasicAuth("guest", "guest")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var overview struct {
		Version string `json:"rabbitmq_version"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&overview); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/overview: %s %v", resp.Status, err)
	}
	return overview.Version
}

func TestUnescapeMountinfo(t *testing.T) {
	if got := unescapeMountinfo(`/tmp/a\040b/c`); got != "/tmp/a b/c" {
		t.Fatalf("got %q", got)
	}
}

func TestKafkaRoundTrip(t *testing.T) {
	t.Parallel()
	k, err := StartKafka(KafkaOptions{Addr: "127.0.0.1:0", Topics: map[string]int32{"orders": 3, "orders.DLT": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	addrs := k.Addrs()
	if len(addrs) != 1 {
		t.Fatalf("Addrs = %v", addrs)
	}
	if host, _, _ := net.SplitHostPort(addrs[0]); host != "127.0.0.1" {
		t.Fatalf("listening on %s, want 127.0.0.1", addrs[0])
	}
	if parts := k.Cluster().PartitionInfos("orders"); len(parts) != 3 {
		t.Fatalf("orders has %d partitions, want 3", len(parts))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AllowAutoTopicCreation()) // the client must ask too

	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rec := &kgo.Record{Topic: "orders", Key: []byte("k1"), Value: []byte("hello"),
		Headers: []kgo.RecordHeader{{Key: "traceId", Value: []byte("t-1")}}}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatal("no record consumed:", err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatal(errs)
		}
		var got []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
		if len(got) == 0 {
			continue
		}
		r := got[0]
		if string(r.Key) != "k1" || string(r.Value) != "hello" || len(r.Headers) != 1 || string(r.Headers[0].Value) != "t-1" {
			t.Fatalf("got %+v", r)
		}
		break
	}

	// Auto topic creation is on by default (franz-go clients must also
	// opt in with kgo.AllowAutoTopicCreation).
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto-created", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce to a new topic: %v", err)
	}
}

func TestKafkaRejectsWildcard(t *testing.T) {
	if _, err := StartKafka(KafkaOptions{Addr: "0.0.0.0:0"}); err == nil {
		t.Fatal("StartKafka on 0.0.0.0 succeeded")
	}
}

// A node that cannot start fails fast with its log in the error, and
// leaves nothing running.
func TestRabbitMQStartupFailureShowsLog(t *testing.T) {
	skipWithoutServices(t, rabbitBinDir+"/rabbitmq-server")
	t.Parallel()
	// Something that is not epmd holds the epmd port: the node cannot
	// register its name and gives up.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	epmd := l.Addr().(*net.TCPAddr).Port
	start := time.Now()
	r, err := StartRabbitMQ(context.Background(), RabbitOptions{Dir: t.TempDir(), EPMDPort: epmd})
	if err == nil {
		r.Stop(context.Background())
		t.Fatal("StartRabbitMQ succeeded with a bogus epmd")
	}
	t.Logf("failed in %s: %v", time.Since(start), err)
	if !strings.Contains(err.Error(), "--- last lines of") {
		t.Fatalf("error has no log tail: %v", err)
	}
}

// The tools make test needs beside the services are named by their Debian packages, each once
// and in order, only when missing; on this machine (where .ci/run or devstack installed them)
// none is.
func TestMissingTestTools(t *testing.T) {
	yes, no := func() bool { return true }, func() bool { return false }
	got := missingPackages([]tool{{"a", yes}, {"python3-avro", no}, {"chromium", no}, {"python3-avro", no}, {"kcat", yes}})
	if want := []string{"python3-avro", "chromium"}; !slices.Equal(got, want) {
		t.Errorf("missing %v, want %v", got, want)
	}
	if got := missingPackages(testTools); len(got) > 0 {
		t.Errorf("this machine lacks %v: make test installs them (go run ./cmd/devstack run)", got)
	}
}
