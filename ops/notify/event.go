// Package notify tells people when something starts burning and when it stops: it turns
// successive problem sets of ops/health into firing and resolved events, routes them by
// notify.rules to channels (webhook, Slack, email), holds them under silences, and delivers them
// from exactly one replica — the holder of the "notify" lease — recording each notification in
// the store before it is sent and marking it delivered after.
package notify

import (
	"slices"
	"time"

	"github.com/redrive/redrive/ops/health"
)

// Event states.
const (
	StateFiring   = "firing"
	StateResolved = "resolved"
	StateTest     = "test"
)

// Event is what a channel sends, and the generic webhook's JSON body.
type Event struct {
	Key      string            `json:"key"`
	Kind     string            `json:"kind"`
	State    string            `json:"state"` // firing | resolved (test for a test notification)
	Severity string            `json:"severity"`
	Title    string            `json:"title"`
	Summary  string            `json:"summary"`
	Link     string            `json:"link"`
	Labels   map[string]string `json:"labels"`
	At       time.Time         `json:"at"`
}

// field is a problem's value for a match or silence key: kind, severity, or a label.
func field(p health.Problem, k string) string {
	switch k {
	case "kind":
		return p.Kind
	case "severity":
		return p.Severity
	}
	return p.Labels[k]
}

// Matches reports whether p matches m: every set field equal.
func Matches(m Match, p health.Problem) bool {
	for k, v := range map[string]string{"kind": m.Kind, "cluster": m.Cluster, "topic": m.Topic, "queue": m.Queue,
		"group": m.Group, "severity": m.Severity} {
		if v != "" && field(p, k) != v {
			return false
		}
	}
	return true
}

// MatchesAll reports whether p matches every matcher (a silence's).
func MatchesAll(matchers map[string]string, p health.Problem) bool {
	for k, v := range matchers {
		if field(p, k) != v {
			return false
		}
	}
	return true
}

// route is a channel a problem goes to, and how often it is repeated there (0: never).
type route struct {
	channel string
	repeat  time.Duration
}

// routes are the channels of the rules p matches; a channel named by several rules repeats at
// the shortest of their repeat_every (0 counting as never).
func routes(rules []Rule, p health.Problem) []route {
	var out []route
	for _, r := range rules {
		if !Matches(r.Match, p) {
			continue
		}
		for _, ch := range r.Channels {
			i := slices.IndexFunc(out, func(x route) bool { return x.channel == ch })
			switch {
			case i < 0:
				out = append(out, route{ch, r.RepeatEvery})
			case r.RepeatEvery > 0 && (out[i].repeat == 0 || r.RepeatEvery < out[i].repeat):
				out[i].repeat = r.RepeatEvery
			}
		}
	}
	return out
}
