package handlers

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/outbox"
)

// A registry list's cursor names the last record's time and id; one no list gave, whose id holds a
// NUL or invalid UTF-8, is not a cursor (a 400 naming it): PostgreSQL refused the text, and the
// list answered 503 blaming the table and the account's rights. One the list gave reads back.
func TestRecordCursorRefusesWhatNoListGave(t *testing.T) {
	for _, raw := range []string{"0|\x00", "0|\xff", "0|", "x|id", "|id"} {
		if c, ok := decodeRecordCursor(base64.RawURLEncoding.EncodeToString([]byte(raw))); ok {
			t.Errorf("%q read as a cursor: %+v", raw, c)
		}
	}
	at := time.Date(2026, 12, 7, 1, 2, 3, 4, time.UTC)
	c, ok := decodeRecordCursor(encodeRecordCursor(outbox.Record{Created: at, ID: "3f2a-évènement"}))
	if !ok || !c.Created.Equal(at) || c.ID != "3f2a-évènement" {
		t.Fatalf("a list's own cursor: %+v, %v", c, ok)
	}
}
