package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// A note names a topic and, on a record, a record that exist, as a resolution does: a note on
// topic "nope", or on an offset past the end, was a 200 with an audit row.
func TestKafkaNotesNameWhatExists(t *testing.T) {
	ctx := waittest.Context(t, 2*time.Minute)
	k, dead := deadLetterCluster(t, ctx)
	dead(3, "com.acme.PoisonException", "poison")
	base := startConsole(t, sampledKafka(pgtest.NewDatabase(t), k)+basicAuth(""))
	api := base + "/api/v1/kafka/main/topics/"
	for _, tc := range []struct {
		topic, body string
		status      int
		want        string
	}{
		{"nope", `{"record":{"partition":0,"offset":0},"text":"x"}`, http.StatusNotFound, `topic \"nope\" not found`},
		{"nope", `{"error_group":{"exception_type":"x"},"text":"x"}`, http.StatusNotFound, `topic \"nope\" not found`},
		{"orders.DLT", `{"record":{"partition":0,"offset":50},"text":"x"}`, http.StatusBadRequest, "record: partition 0 offset 50 is not in topic orders.DLT (offsets "},
		{"orders.DLT", `{"record":{"partition":7,"offset":0},"text":"x"}`, http.StatusBadRequest, "record: partition 7 is not in topic orders.DLT (it has 2)"},
	} {
		r := bearer(t, "POST", api+tc.topic+"/notes", "tok-operator", tc.body)
		if r.status != tc.status || !strings.Contains(r.body, tc.want) {
			t.Errorf("%s %s: %d %s, want %d saying %q", tc.topic, tc.body, r.status, r.body, tc.status, tc.want)
		}
	}
	if r := bearer(t, "GET", base+"/api/v1/audit?action=kafka.note", "tok-admin", ""); strings.Contains(r.body, `"outcome":"ok"`) {
		t.Errorf("a refused note was audited: %s", r.body)
	}
	if r := bearer(t, "POST", api+"orders.DLT/notes", "tok-operator", `{"error_group":{"exception_type":"com.acme.PoisonException"},"text":"known"}`); r.status != http.StatusOK {
		t.Errorf("a note on an error group of orders.DLT: %d %s", r.status, r.body)
	}
}
