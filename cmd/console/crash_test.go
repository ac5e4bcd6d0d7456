package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/inbox/pginbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/waittest"
)

// consoleProcess is the console running as a separate process, killable at any instruction.
type consoleProcess struct {
	t    *testing.T
	cfg  string
	base string
	cmd  *exec.Cmd
	log  *os.File
	// bin, when set, is a console binary to run instead of this test binary acting as one.
	bin string
}

// startProcess runs the console as a separate process on a free port with the configuration cfg
// (YAML without the listen address, which is added here) and waits until it answers. Its log goes
// to a file; the tail is printed when the test fails.
func startProcess(t *testing.T, cfg string) *consoleProcess {
	t.Helper()
	p := newProcess(t, cfg)
	p.start()
	return p
}

// newProcess is startProcess without the start, for a test that sets the process up first (bin).
func newProcess(t *testing.T, cfg string) *consoleProcess {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	cfgPath := filepath.Join(dir, "console.yaml")
	mustDo(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf("listen: %q\n", addr)+cfg), 0o600))
	log, err := os.Create(filepath.Join(dir, "console.log"))
	mustDo(t, err)
	p := &consoleProcess{t: t, cfg: cfgPath, base: "http://" + addr, log: log}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("the console's log, last lines:\n%s", p.logTail(4000))
		}
	})
	return p
}

// logTail is the last n bytes of the console's log.
func (p *consoleProcess) logTail(n int) string {
	return tail(readFile(p.log.Name()), n)
}

func (p *consoleProcess) start() {
	p.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRunConsole+"=serve --config "+p.cfg)
	if p.bin != "" {
		cmd = exec.Command(p.bin, "serve", "--config", p.cfg)
	}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd = cmd
	waittest.Until(p.t, 30*time.Second, "the console process answers /healthz (see its log)", func() bool {
		r, err := httpGet(p.base + "/healthz")
		return err == nil && r == 200
	})
}

func (p *consoleProcess) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_, _ = p.cmd.Process.Wait()
		p.cmd = nil
	}
}

func httpGet(u string) (int, error) {
	r := doRaw("GET", u, "", "")
	return r.status, r.err
}

// freeAddr is a loopback address nothing listens on: a console's to be, or a dependency that is
// down.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The crash test of the issue: a 5,000-message RabbitMQ DLQ replay is SIGKILLed at random points
// five times and restarted each time. At the end every message is in exactly one place — the
// original queue or the DLQ — none is lost, and the only duplicates a consumer sees are copies of
// messages its inbox already marks processed (so they are absorbed, not applied twice).
func TestCrashDuringRabbitReplayLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: seconds of SIGKILL and restarts")
	}
	const n = 5000
	ctx := waittest.Context(t, 4*time.Minute)
	vhost, ch, _ := deadLetteredOrders(t, ctx, n, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), DeliveryMode: amqp.Persistent, Body: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	})

	inboxDSN := pgtest.NewDatabase(t)
	pgtest.Exec(t, inboxDSN, pginbox.SeedDDL+`
		INSERT INTO inbox_message SELECT 'm-' || g, 'inventory-service', now(), now() FROM generate_series(0, 4999, 10) g`)
	p := startProcess(t, inventoryConfig(t, pgtest.NewDatabase(t), vhost, inboxDSN))

	r := doRaw("POST", p.base+"/api/v1/replays/plan", "application/json",
		fmt.Sprintf(`{"source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":%d}}`, vhost, n))
	var plan struct {
		PlanID  string         `json:"plan_id"`
		Total   int            `json:"total"`
		Actions map[string]int `json:"actions"`
	}
	if r.status, r.body = planned(t, p.base, r.status, r.body); r.status != 200 || json.Unmarshal([]byte(r.body), &plan) != nil ||
		plan.Total != n || plan.Actions["publish"] != 4500 {
		t.Fatalf("plan: %d %s", r.status, r.body)
	}
	job := startJob(t, p.base, fmt.Sprintf(`{"plan_id":%q,"rate_per_second":1500,"reason":"crash test"}`, plan.PlanID))

	for kill := 0; kill < 5; kill++ {
		// Kill while messages move: once this process has made progress, at a random moment.
		waitReplayMoves(t, p.base, job.ID, replayOf(p.base, job.ID).Published, 30*time.Second)
		time.Sleep(time.Duration(rand.IntN(250)) * time.Millisecond) // the random moment is the point
		p.kill()
		t.Logf("kill %d: DLQ %d, work %d", kill+1, rabbittest.Depth(t, ch, "orders.dlq"), rabbittest.Depth(t, ch, "orders.work"))
		p.start()
	}
	final := waitReplay(t, p.base, job.ID, 3*time.Minute)
	if final.Status != replay.JobDone {
		t.Fatalf("job did not finish: %+v", final)
	}
	p.kill()
	if final.Published != 4500 || final.Skipped != 500 || final.Failed != 0 {
		t.Fatalf("final job %+v", final)
	}

	// Read both queues to the end.
	work, dlq := drainIDs(t, ch, "orders.work"), drainIDs(t, ch, "orders.dlq")
	inDLQ := map[string]bool{}
	for _, id := range dlq {
		inDLQ[id] = true
	}
	for _, id := range work {
		if inDLQ[id] {
			t.Errorf("%s is both in the DLQ and back in the original queue", id)
		}
	}
	// The consumer, with its inbox: apply each message once, absorb the copies.
	applied, copies := consumeThroughInbox(t, ctx, inboxDSN, work)
	absorbed := len(copies)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m-%d", i)
		switch {
		case i%10 == 0 && (!inDLQ[id] || applied[id]):
			t.Errorf("%s was processed before: it must stay in the DLQ and not be applied again", id)
		case i%10 != 0 && !applied[id]:
			t.Errorf("%s was lost: not applied by the consumer (in DLQ: %v)", id, inDLQ[id])
		}
	}
	t.Logf("after 5 kills: %d messages back in the original queue (%d copies absorbed by the inbox), %d left in the DLQ",
		len(work), absorbed, len(dlq))
}

// deadLetteredOrders is a vhost where n orders (msg(i) each), published to orders.work, were
// all rejected by a failing consumer: the broker dead-lettered them through orders.dlx into
// orders.dlq, in order.
func deadLetteredOrders(t *testing.T, ctx context.Context, n int, msg func(i int) amqp.Publishing) (string, *amqp.Channel, *rabbithole.Client) {
	t.Helper()
	vhost, amqpURL, mgmt := rabbittest.NewVhost(t)
	_, ch := rabbittest.Channel(t, amqpURL)
	declareOrders(t, ch)
	for i := 0; i < n; i++ {
		mustDo(t, ch.PublishWithContext(ctx, "orders", "order.created", false, false, msg(i)))
	}
	// The consumer fails every message: the broker dead-letters them all.
	mustDo(t, ch.Qos(500, 0, false))
	deliveries, err := ch.Consume("orders.work", "failing", false, false, false, false, nil)
	mustDo(t, err)
	for i := 0; i < n; i++ {
		mustDo(t, (<-deliveries).Reject(false))
	}
	mustDo(t, ch.Cancel("failing", false))
	rabbittest.WaitDepth(t, ch, "orders.dlq", n, 20*time.Second)
	return vhost, ch, mgmt
}

type rawResponse struct {
	status int
	body   string
	err    error
}

// doRaw is do for code outside a test's goroutine or where a failed request is expected.
// startJob starts a replay job through the API with body ({"plan_id", …}) and gives its id; the
// process tests start theirs this way.
func startJob(t *testing.T, base, body string) struct{ ID string } {
	t.Helper()
	r := doRaw("POST", base+"/api/v1/replays", "application/json", body)
	var job struct{ ID string }
	if r.status != 200 || json.Unmarshal([]byte(r.body), &job) != nil {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	return job
}

func doRaw(method, u, contentType, body string) rawResponse {
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		return rawResponse{err: err}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return rawResponse{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return rawResponse{status: resp.StatusCode, body: string(b), err: err}
}

func drainIDs(t *testing.T, ch *amqp.Channel, queue string) []string {
	t.Helper()
	var out []string
	for {
		d, ok, err := ch.Get(queue, true)
		mustDo(t, err)
		if !ok {
			return out
		}
		out = append(out, d.MessageId)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}
