// Package doctor checks every dependency in a console configuration the way the console will use
// it — connections, schemas, indexes, rights, tags, ACLs — without changing anything, and says for
// each problem what to change: the GRANT statement, the RabbitMQ tag or permission, the Kafka ACL.
//
// Checks are plain Go over the adapters' own read-only methods (ops/store, ops/outbox, ops/inbox,
// ops/kafka, ops/rabbit), reached through the ports of ports.go and the outbox and inbox domains'
// types, so that the doctor imports no driver: rights are read from the catalog (has_column_privilege in PostgreSQL,
// information_schema's privilege tables in MySQL/MariaDB), from Kafka's
// authorized operations or ACLs and from the management API, never by trying the change. The one
// exception is RabbitMQ's write right when the management user may not read permissions: it is
// probed with a publish inside an AMQP transaction that is rolled back, which routes nothing.
package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/outbox"
)

// Status is a check's outcome.
type Status string

// Outcomes, best first.
const (
	OK      Status = "ok"
	Warning Status = "warning" // works, but not as well as it could, or could not be checked
	Failed  Status = "failed"  // the console will fail at this; Fix says what to change
)

// Check is one line of the report.
type Check struct {
	Target string `json:"target"` // store, outbox/<name>, inbox/<consumer>, kafka/<name>, rabbitmq/<name>, schema_registry/<cluster>
	Name   string `json:"check"`  // what was checked: connect, columns, UPDATE, read orders.DLT, …
	Status Status `json:"status"`
	Detail string `json:"detail"`        // what was found
	Fix    string `json:"fix,omitempty"` // what to change; empty when OK
}

// Report is the outcome of a run, in config order.
type Report struct {
	Checks   []Check       `json:"checks"`
	OK       int           `json:"ok"`
	Warnings int           `json:"warnings"`
	Failed   int           `json:"failed"`
	Took     time.Duration `json:"-"`
}

// Passed reports whether no check failed (warnings pass).
func (r Report) Passed() bool { return r.Failed == 0 }

// Adapters are the console's running adapters, by configured name; the doctor uses them instead of
// opening connections of its own. A name missing from a map makes the doctor open that adapter
// with the Open function of its kind for the run and close it afterwards.
type Adapters struct {
	// Store reads the facts of Redrive's own schema (cmd wires ops/store). Without it the store's
	// connect check fails.
	Store    StoreSchema
	Outboxes map[string]*outbox.Outbox
	Inboxes  map[string]*inbox.Inbox // by consumer name
	Kafka    map[string]KafkaCluster
	Rabbit   map[string]RabbitBroker
	// OpenOutbox and OpenInbox open an outbox or an inbox that is not running, with the adapter of
	// its DSN's database (cmd wires them: the scheme picks PostgreSQL or MySQL). Required when the
	// config has outboxes or inboxes and the maps above lack them; without, their connect check
	// fails.
	OpenOutbox func(ctx context.Context, cfg configs.Outbox) (*outbox.Outbox, error)
	OpenInbox  func(ctx context.Context, consumer string, cfg configs.Inbox) (*inbox.Inbox, error)
	// OpenKafka and OpenRabbit connect to a Kafka cluster or a RabbitMQ broker that is not running
	// (cmd wires ops/kafka and ops/rabbit), the same way: without, their connect check fails.
	OpenKafka  func(cfg configs.KafkaCluster, ids configs.MessageIDRules) (KafkaCluster, error)
	OpenRabbit func(cfg configs.RabbitMQBroker, ids configs.MessageIDRules) (RabbitBroker, error)
}

// Doctor runs the checks of one configuration. It is safe for concurrent use.
type Doctor struct {
	cfg     *configs.Config
	ad      Adapters
	timeout time.Duration
}

// DefaultTimeout bounds the checks of one dependency.
const DefaultTimeout = 20 * time.Second

// New returns a Doctor for cfg (as configs.Load returns it: defaults applied). ad may be empty.
func New(cfg *configs.Config, ad Adapters) *Doctor {
	return &Doctor{cfg: cfg, ad: ad, timeout: DefaultTimeout}
}

// target is one dependency's checks, run in order.
type target struct {
	name string
	run  func(ctx context.Context, r *recorder)
}

// recorder collects one target's checks.
type recorder struct {
	target string
	checks []Check
}

func (r *recorder) add(status Status, name, fix, format string, args ...any) {
	r.checks = append(r.checks, Check{Target: r.target, Name: name, Status: status, Detail: fmt.Sprintf(format, args...), Fix: fix})
}
func (r *recorder) ok(name, format string, args ...any) { r.add(OK, name, "", format, args...) }
func (r *recorder) warn(name, fix, format string, args ...any) {
	r.add(Warning, name, fix, format, args...)
}
func (r *recorder) fail(name, fix, format string, args ...any) {
	r.add(Failed, name, fix, format, args...)
}

// Run checks every configured dependency, each concurrently and bounded by its own timeout, and
// returns the report in config order: store, outboxes, inboxes, Kafka clusters (with their Schema
// Registry), RabbitMQ brokers.
func (d *Doctor) Run(ctx context.Context) Report {
	start := time.Now()
	targets := d.targets()
	results := make([][]Check, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			tctx, cancel := context.WithTimeout(ctx, d.timeout)
			defer cancel()
			r := &recorder{target: t.name}
			t.run(tctx, r)
			results[i] = r.checks
		})
	}
	wg.Wait()
	rep := Report{Checks: []Check{}, Took: time.Since(start)}
	for _, cs := range results {
		for _, c := range cs {
			rep.Checks = append(rep.Checks, c)
			switch c.Status {
			case OK:
				rep.OK++
			case Warning:
				rep.Warnings++
			default:
				rep.Failed++
			}
		}
	}
	return rep
}

func (d *Doctor) targets() []target {
	cfg := d.cfg
	ts := []target{{"store", d.checkStore}}
	for i, oc := range cfg.Outboxes {
		ts = append(ts, target{"outbox/" + oc.Name, func(ctx context.Context, r *recorder) { d.checkOutbox(ctx, r, i, oc) }})
	}
	for i, c := range cfg.Consumers {
		if c.Inbox == nil {
			continue
		}
		ts = append(ts, target{"inbox/" + c.Name, func(ctx context.Context, r *recorder) { d.checkInbox(ctx, r, i, c) }})
	}
	for i, kc := range cfg.Kafka {
		ts = append(ts, target{"kafka/" + kc.Name, func(ctx context.Context, r *recorder) { d.checkKafka(ctx, r, i, kc) }})
		if kc.SchemaRegistry != nil {
			ts = append(ts, target{"schema_registry/" + kc.Name, func(ctx context.Context, r *recorder) { d.checkRegistry(ctx, r, i, kc) }})
		}
	}
	for i, rc := range cfg.RabbitMQ {
		ts = append(ts, target{"rabbitmq/" + rc.Name, func(ctx context.Context, r *recorder) { d.checkRabbit(ctx, r, i, rc) }})
	}
	return ts
}

// WriteText writes one line per check — status, target, check, what was found — and under a
// problem the fix, then a summary line.
func WriteText(w io.Writer, rep Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Status, c.Target, c.Name, oneLine(c.Detail))
		if c.Fix != "" {
			for _, l := range strings.Split(c.Fix, "\n") {
				fmt.Fprintf(tw, "\t\t\t  fix: %s\n", l)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "all checks passed"
	if !rep.Passed() {
		verdict = "some checks failed"
	}
	_, err := fmt.Fprintf(w, "\n%d ok, %d warnings, %d failed: %s (%s)\n", rep.OK, rep.Warnings, rep.Failed, verdict,
		rep.Took.Round(time.Millisecond))
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// short is an error's text on one line, capped, for a Detail.
// adapter is the console's running adapter of a configured source (by name in running), or, when
// it has none (a doctor run before serve), one opened for this check and closed by release. One
// that cannot be opened fails the check's connect step, fix saying what to check.
func adapter[A interface{ Close() }](r *recorder, running map[string]A, name, fix string, open func() (A, error)) (a A, release func(), ok bool) {
	if a, ok := running[name]; ok {
		return a, func() {}, true
	}
	a, err := open()
	if err != nil {
		r.fail("connect", fix, "%s", short(err))
		return a, nil, false
	}
	return a, a.Close, true
}

func short(err error) string {
	s := oneLine(err.Error())
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
