package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// TestNewErrorGroupNotifies: a kind of failure that appears in a DLT for the first time, or again
// after notify.new_group_window without a record, fires one new_error_group notification; more
// records of it do not fire again; a group last seen before the window and quiet since is not new.
func TestNewErrorGroupNotifies(t *testing.T) {
	k := startKafka(t, nil)
	ctx := waittest.Context(t, 2*time.Minute)
	cl := kfaketest.Client(t, k.Cluster())
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "orders.DLT"); err != nil {
		t.Fatal(err)
	}
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

	var mu sync.Mutex
	var firing []string // the keys of the firing notifications received
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e struct{ Key, Kind, State, Title string }
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &e) == nil && e.Kind == "new_error_group" && e.State == "firing" {
			mu.Lock()
			firing = append(firing, e.Title)
			mu.Unlock()
		}
	}))
	t.Cleanup(receiver.Close)
	received := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), firing...) }

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
`, receiver.URL))
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
