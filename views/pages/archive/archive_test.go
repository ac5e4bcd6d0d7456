package archive

import (
	"testing"
	"time"

	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/viewtest"
)

// An archived message's id and its discard job's id each have a copy button, and the Archived
// column sorts by the instant.
func TestArchiveCopiesIDsAndSortsByTime(t *testing.T) {
	at := time.Date(2026, 12, 2, 15, 4, 5, 0, time.UTC)
	p := Page{Rows: []Row{{ID: 1, MessageID: "m-42", Broker: "main", Vhost: "/", Queue: "orders.dlq", ArchivedAt: at, JobID: "job_3ff4dfa07012f662"}}}
	doc, _ := viewtest.Render(t, List(p))
	row := doc.Find(`[data-testid="archive-row"]`)
	msg, _ := row.Find(`[data-testid="copy-message-id"]`).Attr("data-copy")
	job, _ := row.Find(`[data-testid="copy-job-id"]`).Attr("data-copy")
	when, _ := row.Find("td").First().Attr("data-sort")
	if msg != "m-42" || job != "job_3ff4dfa07012f662" || when != components.TimeSortKey(at) {
		t.Errorf("copies message id %q and job id %q, Archived sorts by %q", msg, job, when)
	}
	if _, ok := doc.Find(`[data-testid="archive-table"]`).Attr("data-sortable"); !ok {
		t.Error("the archive table is not sortable")
	}
}
