package handlers

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The typed responses give clients what the maps they replaced gave: the same names, types and
// nulls (the order of fields is not part of JSON).
func TestTypedResponsesMatchTheirMaps(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sec, next := 1.5, int64(7)
	for name, tc := range map[string]struct{ typed, was any }{
		"history point": {groupPointJSON{At: at, TotalLag: 9, MaxLagSeconds: &sec, Partitions: map[string]int64{"orders/0": 4, "orders/1": -1}},
			map[string]any{"at": at, "total_lag": 9, "max_lag_seconds": &sec, "orders/0": 4, "orders/1": -1}},
		"history point without partitions or time lag": {groupPointJSON{At: at, TotalLag: 0},
			map[string]any{"at": at, "total_lag": 0, "max_lag_seconds": nil}},
		"history": {groupHistoryJSON{Points: []groupPointJSON{}}, map[string]any{"points": []any{}}},
		"records": {recordsJSON{Records: []recordJSON{}, Start: 1, End: 9, LastStableOffset: 8, Isolation: "committed", NextOffset: &next},
			map[string]any{"records": []any{}, "start": 1, "end": 9, "last_stable_offset": 8, "isolation": "committed", "next_offset": 7, "prev_offset": nil}},
		"error groups": {kafkaErrorGroupsJSON{Groups: []kafkaErrorGroupJSON{{ExceptionType: "x.Y", Count: 2, FirstAt: at, LastAt: at, OriginalTopics: []string{}}}, Scanned: 2, Total: 5, TotalExact: true, Capped: true},
			map[string]any{"groups": []any{map[string]any{"exception_type": "x.Y", "exception_cause": "", "count": 2, "open": 0, "first_at": at, "last_at": at,
				"original_topics": []any{}, "sample_message": "", "sample_partition": 0, "sample_offset": 0, "notes": nil}}, "scanned": 2, "total": 5, "total_exact": true, "capped": true}},
		"topics":           {deadLetterTopicsJSON{Topics: []dltJSON{}}, map[string]any{"topics": []any{}}},
		"queue history":    {queueHistoryJSON{Points: []queuePointJSON{}}, map[string]any{"points": []any{}}},
		"replays":          {jobsJSON{Replays: []jobJSON{}}, map[string]any{"replays": []any{}}},
		"delivered":        {channelTestJSON{Channel: "ops", Delivered: true}, map[string]any{"channel": "ops", "delivered": true}},
		"not delivered":    {channelTestJSON{Channel: "ops", Error: "403"}, map[string]any{"channel": "ops", "delivered": false, "error": "403"}},
		"released":         {releasedJSON{Released: 3}, map[string]int64{"released": 3}},
		"requeued":         {requeuedJSON{Requeued: 3}, map[string]int64{"requeued": 3}},
		"progress line":    {progressLine{progressJSON{10, 2}}, map[string]any{"progress": map[string]int64{"scanned": 10, "matched": 2}}},
		"error line":       {errorLine{streamErrorJSON{"the scan failed"}}, map[string]any{"error": map[string]string{"message": "the scan failed"}}},
		"match line":       {matchLine[rabbitMessageJSON]{rabbitMessageJSON{Headers: map[string]string{}}}, map[string]any{"match": rabbitMessageJSON{Headers: map[string]string{}}}},
		"done line":        {doneLine{scanSummary{}}, map[string]any{"done": scanSummary{}}},
		"kafka match line": {matchLine[recordJSON]{recordJSON{Headers: []headerJSON{}}}, map[string]any{"match": recordJSON{Headers: []headerJSON{}}}},
	} {
		if got, want := decoded(t, tc.typed), decoded(t, tc.was); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", name, got, want)
		}
	}
}

func decoded(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out
}
