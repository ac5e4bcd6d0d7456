package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// TestNewErrorGroupNotifies: a kind of failure that appears in a DLT for the first time, or again
// after notify.new_group_window without a record, fires one new_error_group notification; more
// records of it do not fire again; a group last seen before the window and quiet since is not new.
func TestNewErrorGroupNotifies(t *testing.T) {
	k := startKafka(t, map[string]int32{"orders.DLT": 3})
	ctx := waittest.Context(t, 2*time.Minute)
	cl := kfaketest.Client(t, k.Cluster())
	dead := func(at time.Time, n int, typ string) {
		t.Helper()
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: "orders.DLT", Key: []byte(fmt.Sprint("order-", i)), Value: []byte(`{}`), Timestamp: at,
				Headers: []kgo.RecordHeader{{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
					{Key: "kafka_dlt-exception-fqcn", Value: []byte(typ)},
					{Key: "kafka_dlt-exception-message", Value: []byte("failed: " + typ)}}})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	hook, bodies := webhookReceiver(t)
	// received is the titles of the firing new_error_group notifications received.
	received := func() (firing []string) {
		for _, b := range bodies() {
			var e struct{ Key, Kind, State, Title string }
			if json.Unmarshal([]byte(b), &e) == nil && e.Kind == "new_error_group" && e.State == "firing" {
				firing = append(firing, e.Title)
			}
		}
		return firing
	}

	// A timeout last seen three hours ago (outside the 1 h window): not new.
	old := time.Now().Add(-3 * time.Hour)
	dead(old, 4, "java.net.SocketTimeoutException")
	storeDSN := pgtest.NewDatabase(t)
	base := startConsole(t, "auth: {mode: none}\n"+sampledKafka(storeDSN, k)+fmt.Sprintf(`
notify:
  interval: 1s
  new_group_window: 1h
  channels: [{name: hook, type: webhook, url: %q}]
  rules: [{match: {kind: new_error_group}, channels: [hook]}]
`, hook))
	db := pgtest.Conn(t, storeDSN)
	count := func(typ string) (n int64) {
		_ = db.QueryRow(ctx, `SELECT coalesce(sum(count), 0) FROM redrive.error_group WHERE exception_type = $1`, typ).Scan(&n)
		return n
	}
	waittest.Until(t, 30*time.Second, "the sampler records the old group", func() bool { return count("java.net.SocketTimeoutException") == 4 })

	// A poison message type never seen, and the timeout back after its quiet window: both new.
	now := time.Now()
	dead(now, 3, "com.acme.PoisonException")
	dead(now, 1, "java.net.SocketTimeoutException")
	waittest.Until(t, 30*time.Second, "two new_error_group notifications", func() bool { return len(received()) >= 2 })
	titles := strings.Join(received(), "\n")
	if !strings.Contains(titles, "com.acme.PoisonException, 3 records") || !strings.Contains(titles, "java.net.SocketTimeoutException, 1 records") {
		t.Fatalf("the notifications: %s", titles)
	}

	// More of the same: the overview's title counts them, no new notification.
	dead(time.Now(), 5, "com.acme.PoisonException")
	waittest.Until(t, 30*time.Second, "the overview counts 8 poison records", func() bool {
		return strings.Contains(do(t, nil, "GET", base+"/api/v1/overview", "", "").body, "com.acme.PoisonException, 8 records")
	})
	// Three notify rounds: absence is what is checked, throughout.
	waittest.Holds(t, 3*time.Second, "no firing notification besides the two", func() bool { return len(received()) == 2 })
}

// TestBrowserNotificationsLogAndSilence: the delivery log shows the notification the receiver
// got, the test button sends one to the channel, and a silence set with the page's form is listed
// with its matchers and comment, and is audited.
func TestBrowserNotificationsLogAndSilence(t *testing.T) {
	hook, bodies := webhookReceiver(t)
	got := func(s string) bool {
		return slices.ContainsFunc(bodies(), func(b string) bool { return strings.Contains(b, s) })
	}
	base, _ := outboxConsole(t, fmt.Sprintf(`
auth: {mode: none}
notify:
  interval: 1s
  channels: [{name: ops-hook, type: webhook, url: %q}]
  rules: [{match: {kind: outbox_dead}, channels: [ops-hook]}]
`, hook))
	waittest.Until(t, 30*time.Second, "the outbox_dead notification at the receiver", func() bool { return got(`"kind":"outbox_dead"`) })

	ctx, dialogs := newBrowser(t)
	var log string
	waittest.Until(t, 30*time.Second, "the delivery log row", func() bool {
		must(t, ctx, chromedp.Navigate(base+"/notifications"))
		log = must(t, ctx, chromedp.Text(`[data-testid="notify-log"]`))
		return strings.Contains(log, "delivered") && strings.Contains(log, "ops-hook") && strings.Contains(log, "outbox_dead")
	})

	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid="notify-test"]`), chromedp.WaitVisible(`[data-testid="notify-flash"]`)); err != nil {
		t.Fatal(err)
	}
	if flash := must(t, ctx, chromedp.Text(`[data-testid="notify-flash"]`)); !strings.Contains(flash, "ops-hook") {
		t.Errorf("after the test button: %q", flash)
	}
	waittest.Until(t, 10*time.Second, "the test notification at the receiver", func() bool { return got(`"kind":"test"`) })

	form := `[data-testid="silence-form"] `
	if err := chromedp.Do(ctx,
		chromedp.SetValue(form+`select[name="kind"]`, "outbox_stuck"),
		chromedp.SetValue(form+`input[name="duration"]`, "90m"),
		chromedp.SetValue(form+`input[name="comment"]`, "relay redeploy <b>now</b>"),
		chromedp.Submit(form+`button`),
		chromedp.WaitVisible(`[data-testid="silence-row"]`)); err != nil {
		t.Fatal(err)
	}
	row := must(t, ctx, chromedp.Text(`[data-testid="silence-row"]`))
	screenshot(t, ctx, "notifications")
	if !strings.Contains(row, "outbox_stuck") || !strings.Contains(row, "relay redeploy <b>now</b>") {
		t.Errorf("the silence row: %q", row)
	}
	if dialogs.Load() != 0 {
		t.Errorf("%d dialogs opened", dialogs.Load())
	}
	api := do(t, nil, "GET", base+"/api/v1/silences", "", "")
	if api.status != http.StatusOK || !strings.Contains(api.body, `"matchers":{"kind":"outbox_stuck"}`) || !strings.Contains(api.body, `"comment":"relay redeploy \u003cb\u003enow\u003c/b\u003e"`) {
		t.Errorf("GET /api/v1/silences: %d %s", api.status, api.body)
	}
	audit := do(t, nil, "GET", base+"/api/v1/audit", "", "")
	if !strings.Contains(audit.body, "silence") || !strings.Contains(audit.body, "outbox_stuck") {
		t.Errorf("the silence is not audited: %.500s", audit.body)
	}
}

// webhookReceiver is a webhook endpoint of the test's own; bodies returns what it has received so
// far, in order.
func webhookReceiver(t *testing.T) (url string, bodies func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	return receiver.URL, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }
}
