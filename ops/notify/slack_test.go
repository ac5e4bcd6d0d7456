package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The Slack message's fallback text — what notifications and clients without blocks show — was
// the title as it came: "<!channel>" in an exception type pinged the whole channel and
// "<https://evil|…>" made a link. It is escaped as the blocks are.
func TestSlackFallbackTextIsEscaped(t *testing.T) {
	e := Event{State: StateFiring, Kind: "new_error_group", Severity: "warning", At: time.Now(),
		Title:  "New error in orders.DLT (main): <!channel> <https://evil.example|open me> & more",
		Labels: map[string]string{"exception_type": "<!here>"}}
	b, err := json.Marshal(SlackMessage(e))
	if err != nil {
		t.Fatal(err)
	}
	var msg struct{ Text string }
	_ = json.Unmarshal(b, &msg)
	if strings.Contains(msg.Text, "<!channel>") || strings.Contains(msg.Text, "<https://") ||
		!strings.Contains(msg.Text, "&lt;!channel&gt; &lt;https://evil.example|open me&gt; &amp; more") {
		t.Errorf("fallback text %q", msg.Text)
	}
	for _, raw := range []string{"<!channel>", "<!here>", "<https://evil"} {
		if strings.Contains(string(b), raw) {
			t.Errorf("the message carries %s raw: %s", raw, b)
		}
	}
}
