package health

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/replay"
)

// unreachableDSN is a PostgreSQL nobody listens on (port 3), with a user, password and database
// that must never reach a person.
const unreachableDSN = "postgres://qacuser:SECRET@127.0.0.1:3/qacdb?sslmode=disable&connect_timeout=5"

// leaks are pieces of a driver's or Go's error text that no problem, dependency row or
// notification may carry: the connection's user, password, database, host and port, the dial,
// the server's own words about a table, and Go type names.
var leaks = []string{"user=", "database=", "qacuser", "SECRET", "qacdb", "127.0.0.1", ":3/", "port 3", "dial",
	"relation", "qac_missing_table", "does not exist", "ERROR:", "pgconn", "ConnectError", "*net.", "OpError",
	"connection refused", "context deadline exceeded"}

// assertSafe fails when text carries any of leaks.
func assertSafe(t *testing.T, what, text string) {
	t.Helper()
	for _, l := range leaks {
		if strings.Contains(text, l) {
			t.Errorf("%s carries %q: %s", what, l, text)
		}
	}
}

// problemText is everything of p a notification carries (a webhook body is its JSON).
func problemText(t *testing.T, p Problem) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pgxConnectError is the driver's own error for unreachableDSN.
func pgxConnectError(t *testing.T) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, unreachableDSN)
	if err == nil {
		conn.Close(ctx)
		t.Fatal("something answers on 127.0.0.1:3")
	}
	if !strings.Contains(err.Error(), "user=qacuser") || !strings.Contains(err.Error(), "127.0.0.1:3") {
		t.Fatalf("pgx's error no longer names the user and address, the test proves nothing: %v", err)
	}
	return err
}

// Every problem made from a failed source, and every dependency row, says what people may read of
// the error (its ops.Message) and never the driver's text it wraps, which goes to the log: an
// unreachable outbox's title read "…: outbox x-down: stats: failed to connect to `user=qacuser
// database=qacdb`: 127.0.0.1:3 (127.0.0.1): dial error: …".
func TestProblemsFromErrorsShowOnlyTheirMessage(t *testing.T) {
	driver := pgxConnectError(t)
	withMessage := func(format string, a ...any) error {
		return ops.Unavailable(fmt.Errorf("wrapped: %w", driver), format, a...)
	}
	cases := []struct {
		name string
		err  error
		want string // the reason shown
	}{
		{"an adapter's message", withMessage("the database of outbox %q did not answer (stats); try again, or see whether it is up", "x-down"),
			`the database of outbox "x-down" did not answer (stats); try again, or see whether it is up`},
		{"a message wrapped with context", fmt.Errorf("outbox x-down: stats: %w",
			withMessage("outbox %q is busy: raise max_conns", "x-down")), `outbox "x-down" is busy: raise max_conns`},
		{"the driver's error alone", fmt.Errorf("outbox x-down: stats: %w", driver), noAnswer},
		{"an unavailable kind without a message", fmt.Errorf("kafka main: %w: %w", ops.ErrUnavailable, driver), noAnswer},
		{"a deadline", fmt.Errorf("outbox x-down: stats: %w", context.DeadlineExceeded), noAnswerInTime},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := reason(c.err); got != c.want {
				t.Errorf("reason = %q, want %q", got, c.want)
			}
			made := map[string][]Problem{
				"kafka":  KafkaProblems("main", lag.Snapshot{}, c.err, now),
				"rabbit": RabbitProblems("rmq", queues.Snapshot{}, c.err, now),
				"outbox": OutboxProblems("x-down", outbox.Stats{}, 0, c.err, time.Hour, now),
				"replay": ReplayProblems([]replay.Job{{ID: "j1", Status: replay.JobRunning}}, c.err, now),
			}
			subject := map[string]string{"kafka": "Lag of main unavailable: ", "rabbit": "Queues of rmq unavailable: ",
				"outbox": "Outbox x-down cannot be read: ", "replay": "Replay jobs cannot be read: "}
			for src, ps := range made {
				if len(ps) != 1 {
					t.Fatalf("%s: %d problems, want 1: %+v", src, len(ps), ps)
				}
				if want := subject[src] + c.want; ps[0].Title != want {
					t.Errorf("%s title = %q, want %q", src, ps[0].Title, want)
				}
				assertSafe(t, src+" problem", problemText(t, ps[0]))
			}
		})
	}
}

// A dependency whose check fails shows, in its row and its dependency_down problem, the check
// error's message; the log gets the driver's text, once while it stays the same.
func TestMonitorLogsWhatItDoesNotShow(t *testing.T) {
	driver := pgxConnectError(t)
	var failing error = ops.Unavailable(fmt.Errorf("outbox x-down: ping: %w", driver),
		"the database of outbox %q did not answer (ping); try again, or see whether it is up", "x-down")
	var log bytes.Buffer
	m := NewMonitor(Sources{
		Checks: []Check{{Name: "outbox/x-down", Ping: func(context.Context) error { return failing }}},
		Log:    slog.New(slog.NewTextHandler(&log, nil)),
		Now:    func() time.Time { return now },
	})
	r := m.Evaluate(context.Background())
	want := `the database of outbox "x-down" did not answer (ping); try again, or see whether it is up`
	if len(r.Dependencies) != 1 || r.Dependencies[0].OK || r.Dependencies[0].Error != want {
		t.Fatalf("dependencies: %+v", r.Dependencies)
	}
	if len(r.Problems) != 1 || r.Problems[0].Title != "outbox/x-down is unreachable: "+want {
		t.Fatalf("problems: %+v", r.Problems)
	}
	assertSafe(t, "problem", problemText(t, r.Problems[0]))
	for _, s := range []string{"dependency_down/outbox/x-down", "user=qacuser", "127.0.0.1:3"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("the log lacks %q: %s", s, log.String())
		}
	}
	if n := strings.Count(log.String(), "\n"); n != 1 {
		t.Errorf("%d log lines after one evaluation, want 1: %s", n, log.String())
	}
	m.Evaluate(context.Background())
	if n := strings.Count(log.String(), "\n"); n != 1 {
		t.Errorf("the same error was logged again: %s", log.String())
	}
	failing = errors.New("something else") // read by the next evaluation's check only
	m.Evaluate(context.Background())
	if n := strings.Count(log.String(), "\n"); n != 2 || !strings.Contains(log.String(), "something else") {
		t.Errorf("a changed error was not logged: %s", log.String())
	}
}
