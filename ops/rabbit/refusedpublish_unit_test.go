package rabbit

import (
	"strings"
	"testing"
)

// A topic permission's refusal names the routing key and the exchange, as RabbitMQ 3.10 and 4.x
// word it; it used to be read as a "topic" named "<key>' in exchange '<exchange>".
func TestParseRefusalOfATopic(t *testing.T) {
	for _, reason := range []string{
		"ACCESS_REFUSED - access to topic 'order.us' in exchange 'events' in vhost 'v' refused for user 'u'",
		"ACCESS_REFUSED - write access to topic 'order.us' in exchange 'events' in vhost 'v' refused for user 'u'",
	} {
		r, key := parseRefusalKey(reason)
		if want := (refusal{"write", "topic", "events", "v", "u", true}); r != want || key != "order.us" {
			t.Errorf("parseRefusalKey(%q) = %+v, %q; want %+v, %q", reason, r, key, want, "order.us")
		}
		msg := r.words(key, nil)
		for _, w := range []string{`RabbitMQ user "u" may not publish to topic exchange "events" in vhost "v" with routing key "order.us"`,
			`rabbitmqctl set_topic_permissions -p 'v' 'u' 'events' '<write>|^order\.us$' '<read>'`} {
			if !strings.Contains(msg, w) {
				t.Errorf("message %q does not hold %q", msg, w)
			}
		}
	}
}

// The write pattern RabbitMQ reads: "" matches nothing; a pattern Go's regexp does not compile
// (PCRE has more) is not known, and refuses nothing; a name outside printable ASCII is not judged.
func TestPublishRightsPatterns(t *testing.T) {
	if re := permissionPattern(""); re == nil || re.MatchString("orders") || !re.MatchString("") {
		t.Error(`"" must match only the empty name`)
	}
	if re := permissionPattern(`^(?!billing)`); re != nil {
		t.Error("a lookahead compiled")
	}
	p := &publishRights{asked: true, vhost: "v", user: "u", write: permissionPattern("^orders$"),
		have: map[string]string{"configure": "", "write": "^orders$", "read": ".*"}}
	if err := p.refused(t.Context(), "orders", "k"); err != nil {
		t.Errorf("orders: %v", err)
	}
	if err := p.refused(t.Context(), "bílling", "k"); err != nil {
		t.Errorf("a name outside ASCII was judged: %v", err)
	}
	err := p.refused(t.Context(), "billing", "k")
	if err == nil || !strings.Contains(err.Error(), `rabbitmqctl set_permissions -p 'v' 'u' '' '^orders$|^billing$' '.*'`) {
		t.Errorf("billing: %v", err)
	}
	p.have["write"], p.write = "", permissionPattern("")
	if err := p.refused(t.Context(), "billing", "k"); err == nil || !strings.Contains(err.Error(), `'' '^billing$' '.*'`) {
		t.Errorf("billing under an empty write pattern: %v; want the pattern replaced", err)
	}
}
