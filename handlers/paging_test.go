package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/storetest"
)

// The audit log and the archive, paged by their cursors at every page size, list each row once and
// end on the page that holds the last row: a list whose length is a multiple of the page size
// answered a next_cursor on its last page, which led to an empty page (the QA's 3 archived
// messages with limit=3). The largest page (limit=1000 of the audit log) is allowed as before.
func TestListPagesEndWithTheirLastRow(t *testing.T) {
	st := storetest.Open(t)
	ctx := context.Background()
	const n = 6
	archived := make([]replay.Archived, n)
	for i := range n {
		if err := st.RecordAudit(ctx, audit.Entry{Actor: "otto", Action: "outbox.requeue", Target: "outbox/orders",
			Reason: fmt.Sprint(i), Outcome: audit.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
		archived[i] = replay.Archived{JobID: "job_paging", Locator: fmt.Sprintf("rabbitmq/main/%%2F/audit.dlq/%d", i),
			MessageID: fmt.Sprintf("m-%d", i), Broker: "main", Vhost: "/", Queue: "audit.dlq", Actor: "otto", Body: []byte("{}"), HeadersWire: []byte{}}
	}
	if err := st.ArchiveMessages(ctx, archived); err != nil {
		t.Fatal(err)
	}
	type page struct {
		Entries    []struct{ ID int64 }
		Messages   []struct{ ID int64 }
		NextCursor *string `json:"next_cursor"`
	}
	for _, list := range []struct {
		name string
		api  echo.HandlerFunc
		path string
	}{
		{"audit", NewAudit(st, nil).API, "/api/v1/audit"},
		{"archive", NewArchive(st, nil, nil).API, "/api/v1/archive"},
	} {
		for limit := 1; limit <= n+1; limit++ {
			seen, pages, cursor := map[int64]bool{}, 0, ""
			for {
				rec, err := callAPI(t, list.api, fmt.Sprintf("%s?limit=%d%s", list.path, limit, cursor), nil)
				if err != nil {
					t.Fatalf("%s limit=%d: %v", list.name, limit, err)
				}
				var p page
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
					t.Fatal(err)
				}
				pages++
				rows := append(p.Entries, p.Messages...)
				if len(rows) == 0 {
					t.Fatalf("%s limit=%d: page %d is empty (the page before offered a next_cursor)", list.name, limit, pages)
				}
				for _, r := range rows {
					if seen[r.ID] {
						t.Fatalf("%s limit=%d: row %d listed twice", list.name, limit, r.ID)
					}
					seen[r.ID] = true
				}
				if p.NextCursor == nil {
					break
				}
				cursor = "&cursor=" + *p.NextCursor
			}
			if wantPages := (n + limit - 1) / limit; len(seen) != n || pages != wantPages {
				t.Errorf("%s limit=%d: %d rows in %d pages; want %d in %d", list.name, limit, len(seen), pages, n, wantPages)
			}
		}
	}
	if _, err := callAPI(t, NewAudit(st, nil).API, fmt.Sprintf("/api/v1/audit?limit=%d", audit.MaxLimit), nil); err != nil {
		t.Errorf("audit limit=%d: %v", audit.MaxLimit, err)
	}
	if _, err := callAPI(t, NewArchive(st, nil, nil).API, fmt.Sprintf("/api/v1/archive?limit=%d", replay.MaxArchiveLimit), nil); err != nil {
		t.Errorf("archive limit=%d: %v", replay.MaxArchiveLimit, err)
	}
}
