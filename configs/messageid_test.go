package configs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/jsonpath"
)

// message_id.json_paths take the grammar of redaction.json_paths, and still the old bare form,
// which is read as before and warned about with the way to write it.
func TestMessageIDJSONPathForms(t *testing.T) {
	cfg, err := Parse([]byte(minimal+"message_id: {json_paths: [\"$.messageId\", \"$.meta['trace.id']\", \"$.items[0].id\"]}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Warnings(); len(w) != 0 {
		t.Errorf("the grammar's form is not warned about: %q", w)
	}

	cfg, err = Parse([]byte(minimal+"message_id: {json_paths: [messageId, meta.id, items.0.id, \"$.ok\"]}\n"), env(nil))
	if err != nil {
		t.Fatalf("the old form must still load: %v", err)
	}
	w := cfg.Warnings()
	if len(w) != 3 || !strings.Contains(w[0], `message_id.json_paths[0]: "messageId" is the old form`) || !strings.Contains(w[0], `write it "$.messageId"`) ||
		!strings.Contains(w[1], `"$.meta.id"`) || !strings.Contains(w[2], `message_id.json_paths[2]`) || !strings.Contains(w[2], `"$.items[0].id"`) {
		t.Errorf("warnings: %q", w)
	}
	for _, p := range []string{"messageId", "meta.id", "items.0.id"} {
		bare, isBare, err := jsonpath.ParseMessageID(p)
		if err != nil || !isBare {
			t.Fatalf("%s: %v %v", p, isBare, err)
		}
		if _, again, err := jsonpath.ParseMessageID(bare.String()); err != nil || again {
			t.Errorf("%s: the suggested %s does not read: %v", p, bare.String(), err)
		}
	}

	for _, tc := range []struct{ paths, key string }{
		{`["$.items[*].id"]`, "message_id.json_paths[0]"},
		{`[messageId, "$.a.*"]`, "message_id.json_paths[1]"},
		{`["$.a["]`, "message_id.json_paths[0]"},
	} {
		_, err := Parse([]byte(minimal+"message_id: {json_paths: "+tc.paths+"}\n"), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: %v, want an error naming %s", tc.paths, err, tc.key)
		}
	}

	cfg, err = Parse([]byte(minimal), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Warnings(); len(w) != 0 || !reflect.DeepEqual(cfg.MessageID.JSONPaths, []string{"$.messageId", "$.eventId", "$.id"}) {
		t.Errorf("defaults: %q, warnings %q", cfg.MessageID.JSONPaths, w)
	}
}
