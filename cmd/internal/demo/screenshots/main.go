// Command screenshots refreshes the README's gallery (docs/screenshots) from the demo's data: it
// starts `console demo` on free ports in a folder of its own, waits until the console answers and
// its sampler has gathered a minute of history, takes each page with Debian's headless chromium
// at 1440 px, and stops the demo. `make screenshots` runs it.
//
//	screenshots [-console bin/console] [-out docs/screenshots] [-warm 60s]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	demodata "github.com/redrive/redrive/cmd/internal/demo"
	"github.com/redrive/redrive/paths"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "screenshots:", err)
		os.Exit(1)
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func run() error {
	console := flag.String("console", "bin/console", "the console binary")
	out := flag.String("out", "docs/screenshots", "where the pictures go")
	warm := flag.Duration("warm", 60*time.Second, "how long the demo runs before the pictures (history for the charts)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	listen, err := freeAddr()
	if err != nil {
		return err
	}
	kafkaAddr, err := freeAddr()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "redrive-screenshots-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	var log bytes.Buffer
	demo := exec.Command(*console, "demo", "--listen", listen, "--kafka", kafkaAddr, "--dir", dir)
	demo.Stdout, demo.Stderr = &log, &log
	if err := demo.Start(); err != nil {
		return err
	}
	defer func() {
		_ = demo.Process.Signal(os.Interrupt)
		_ = demo.Wait()
	}()
	base := "http://" + listen
	fmt.Printf("screenshots: demo starting on %s (folder %s)…\n", base, dir)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if r, err := http.Get(base + paths.Readyz); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the demo did not answer; its output:\n%s", log.String())
		}
		time.Sleep(time.Second)
	}
	fmt.Printf("screenshots: demo ready; letting it run %s for the charts…\n", *warm)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(*warm):
	}
	job := firstMatch(base+paths.Replays, `href="(/replays/job_[0-9a-f]+)"`)
	plan, err := planOf(base, `{"source":{"kind":"kafka","cluster":"main","topic":"refunds.DLT"}}`)
	if err != nil {
		return err
	}
	pages := []struct{ name, path string }{
		{"overview", paths.Overview},
		{"kafka-dlt", paths.KafkaTopic("main", "orders.DLT")},
		{"kafka-dlt-table", paths.KafkaTopic("main", "refunds.DLT")},
		{"kafka-topic-search", paths.KafkaTopic("main", "orders.DLT") + "?filter=" + url.QueryEscape(`dead_letter.exception_type.contains("Timeout")`)},
		{"kafka-group-pipeline", paths.KafkaGroup("main", "inventory-service")},
		{"kafka-group-stall", paths.KafkaGroup("main", "shipping-service")},
		{"kafka-groups", paths.KafkaCluster("main")},
		{"kafka-group-share", paths.KafkaGroup("main", demodata.MailerShareGroup)},
		{"trace-timeline", paths.Trace + "?q=evt-000042"},
		{"notifications", paths.Notifications},
		{"rabbitmq-queues-live", paths.RabbitBroker("main")},
		{"rabbitmq-queue", paths.QueueMessages("main", "/", "orders.dlq")},
		{"replays", paths.Replays},
		{"replay-job", job},
		{"replay-plan", paths.ReplayPlan(plan)},
		{"outbox", paths.Outbox("refunds")},
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, p := range pages {
		if p.path == "" {
			fmt.Printf("screenshots: %s skipped: nothing to show\n", p.name)
			continue
		}
		file, err := filepath.Abs(filepath.Join(*out, p.name+".png"))
		if err != nil {
			return err
		}
		shot := exec.CommandContext(ctx, "/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
			"--window-size=1440,1000", "--virtual-time-budget=4000", "--screenshot="+file, base+p.path)
		if b, err := shot.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", p.name, err, b)
		}
		fmt.Printf("screenshots: %s ← %s\n", file, p.path)
	}
	return nil
}

// firstMatch is the first submatch of re in the page at u ("" when none).
func firstMatch(u, re string) string {
	r, err := http.Get(u)
	if err != nil {
		return ""
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if m := regexp.MustCompile(re).FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

// planOf plans a replay through the API and returns the plan's id.
func planOf(base, body string) (string, error) {
	r, err := http.Post(base+paths.APIPlanReplay, "application/json", bytes.NewBufferString(body))
	if err != nil {
		return "", err
	}
	defer r.Body.Close()
	var p struct {
		PlanID string `json:"plan_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.PlanID == "" {
		return "", fmt.Errorf("plan a replay: %d %v", r.StatusCode, err)
	}
	return p.PlanID, nil
}
