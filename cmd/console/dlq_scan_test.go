package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/redrive/redrive/paths"
)

// A DLQ's page with a CEL filter shows the filter's scan, not the unfiltered browse below it
// (which listed every message under a box that had matched three, issue 37 item 16): it says
// where the matches are and links the page without the filter, which lists every message.
func TestDLQScanHidesTheUnfilteredList(t *testing.T) {
	base, vhost, _ := rabbitConsole(t)
	page := base + paths.QueueMessages("main", vhost, "orders.dlq")
	filtered := do(t, nil, "GET", page+"?limit=20&filter="+url.QueryEscape(`dead_letter.reason == "expired"`), "", "")
	if filtered.status != 200 || !strings.Contains(filtered.body, `data-scan-kind="rabbitmq"`) ||
		!strings.Contains(filtered.body, `data-testid="unfiltered-hidden"`) || strings.Contains(filtered.body, `data-testid="messages-table"`) {
		t.Fatalf("filtered page: %d, scan %v, note %v, unfiltered table %v", filtered.status,
			strings.Contains(filtered.body, `data-scan-kind="rabbitmq"`), strings.Contains(filtered.body, `unfiltered-hidden`),
			strings.Contains(filtered.body, `messages-table`))
	}
	if !strings.Contains(filtered.body, `href="`+paths.QueueMessages("main", vhost, "orders.dlq")+`?limit=20"`) {
		t.Errorf("the note does not link the page without the filter")
	}
	plain := do(t, nil, "GET", page+"?limit=20", "", "")
	if plain.status != 200 || !strings.Contains(plain.body, `data-testid="messages-table"`) || strings.Contains(plain.body, `unfiltered-hidden`) {
		t.Errorf("unfiltered page: %d, table %v", plain.status, strings.Contains(plain.body, `messages-table`))
	}
}
