package kafka

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeDeadLetter feeds arbitrary header names and values: decoding must not panic, and
// whatever it returns must encode as JSON (valid UTF-8, timestamps within JSON's year range).
func FuzzDecodeDeadLetter(f *testing.F) {
	f.Add("kafka_dlt-original-partition", []byte{0, 0, 0, 3}, "kafka_dlt-original-offset", []byte{0, 0, 0, 0, 0, 0, 3, 44}, []byte(`{"messageId":"m"}`))
	f.Add("kafka_original-timestamp", []byte("1772181000123"), "retry_topic-attempts", []byte{0, 0, 0, 2}, []byte(nil))
	f.Add("originalTopic", []byte("\xff"), "originalOffset", []byte("-1"), []byte(`{"meta":{"id":[1]}}`))
	names := DefaultHeaderNames()
	f.Fuzz(func(t *testing.T, k1 string, v1 []byte, k2 string, v2 []byte, value []byte) {
		headers := []Header{{Key: k1, Value: v1}, {Key: k2, Value: v2}, {Key: k1, Value: v2}}
		dl := DecodeDeadLetter(headers, value, names, testIDs)
		if dl == nil {
			return
		}
		if dl.Convention == "" {
			t.Fatal("dead letter without a convention")
		}
		for _, s := range []string{dl.OriginalTopic, dl.ExceptionType, dl.ExceptionMessage, dl.MessageID, dl.FirstFailedAt, dl.TraceID} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 %q", s)
			}
		}
		if _, err := json.Marshal(dl); err != nil {
			t.Fatalf("dead letter does not encode: %v", err)
		}
	})
}
