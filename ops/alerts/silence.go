package alerts

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/ops"
)

// SilenceKeys are the matchers a silence may name: a problem's kind and severity, and its labels.
var SilenceKeys = []string{"kind", "severity", "cluster", "topic", "queue", "group", "broker", "vhost", "outbox", "job", "dependency"}

// Bounds of a silence.
const (
	// MinSilence is the shortest silence: one that ends before the notifier's next round or two
	// holds nothing, and "1ns" or "1s" is a typo for something longer, so it is refused.
	MinSilence = time.Minute
	// MaxSilence is the longest: a problem held quiet for longer should be fixed or its rule changed.
	MaxSilence = 30 * 24 * time.Hour
	// MaxSilenceComment bounds a comment, in characters: it is refused beyond, never cut (an answer
	// that echoes more than the store keeps would be a lie).
	MaxSilenceComment = 1000
)

// Vocabulary is what a silence's "kind" and "severity" matchers may name: ops/health's kinds and
// severities, handed in because this package imports nothing of the console's domain. A matcher
// naming anything else could never match, so it is refused with the list.
type Vocabulary struct {
	Kinds      []string
	Severities []string
}

// SilenceLimits bound a silence by the role of the person setting it (notify.silences): what
// the setter may not do is refused (ops.ErrForbidden, an ops.ErrRefused the web layer audits).
type SilenceLimits struct {
	// Max is the longest silence the setter may set; zero means MaxSilence. MaxKey names the
	// config key that sets it, for the refusal.
	Max    time.Duration
	MaxKey string
	// Severities, when not nil, are the severities the setter may silence: the silence must name
	// one of them as its severity matcher (without one it would silence every severity). SeverityKey
	// names the config key.
	Severities  []string
	SeverityKey string
}

// SilenceRequest is a silence asked for, before it is checked.
type SilenceRequest struct {
	Matchers map[string]string
	// For, when not zero, ends the silence For after now (its errors name "duration"); otherwise
	// it ends at EndsAt (its errors name "ends_at").
	For       time.Duration
	EndsAt    time.Time
	Comment   string
	CreatedBy string
	// Limits are the setter's (by role); the zero value allows any silence of up to MaxSilence.
	Limits SilenceLimits
}

// Silence checks r and returns the silence to store; an ops.ErrInvalid names the field to fix:
// at least one matcher, each a known key with text PostgreSQL can hold, a kind and severity that
// exist (v), an end between MinSilence and MaxSilence from now, and a comment of at most
// MaxSilenceComment characters. A silence past the setter's Limits (longer than its Max, or not
// naming one of its Severities) is an ops.ErrForbidden saying which key bounds it.
func (r SilenceRequest) Silence(now time.Time, v Vocabulary) (Silence, error) {
	s := Silence{Matchers: map[string]string{}, Comment: strings.TrimSpace(r.Comment), CreatedBy: r.CreatedBy}
	for _, k := range slices.Sorted(maps.Keys(r.Matchers)) {
		field := "matchers." + k
		if !slices.Contains(SilenceKeys, k) {
			return s, ops.Invalid(field, "unknown; one of "+strings.Join(SilenceKeys, ", "))
		}
		val := strings.TrimSpace(r.Matchers[k])
		if problem := ops.TextProblem(val); problem != "" {
			return s, ops.Invalid(field, problem)
		}
		if val == "" {
			continue
		}
		if list := v.of(k); list != nil && !slices.Contains(list, val) {
			return s, ops.Invalid(field, fmt.Sprintf("%q is not a problem %s; one of %s", val, k, strings.Join(list, ", ")))
		}
		s.Matchers[k] = val
	}
	if len(s.Matchers) == 0 {
		return s, ops.Invalid("matchers", "name at least one of "+strings.Join(SilenceKeys, ", "))
	}
	field := "ends_at"
	s.EndsAt = r.EndsAt
	if r.For != 0 {
		field, s.EndsAt = "duration", now.Add(r.For)
	}
	d := s.EndsAt.Sub(now)
	if d < MinSilence || d > MaxSilence {
		return s, ops.Invalid(field, "must end between 1m and 30d from now")
	}
	if l := r.Limits; l.Max > 0 && d > l.Max {
		return s, ops.Forbidden("a silence you set may last at most %s (%s); this one would last %s — set a shorter one, or ask an admin",
			ops.FormatAge(l.Max), l.MaxKey, ops.FormatAge(d.Round(time.Minute)))
	}
	if l := r.Limits; l.Severities != nil && !slices.Contains(l.Severities, s.Matchers["severity"]) {
		return s, ops.Forbidden("a silence you set must name the severity it silences, one of %s (%s); only an admin silences other severities",
			strings.Join(l.Severities, ", "), l.SeverityKey)
	}
	if problem := ops.TextProblem(s.Comment); problem != "" {
		return s, ops.Invalid("comment", problem)
	}
	if n := utf8.RuneCountInString(s.Comment); n > MaxSilenceComment {
		return s, ops.Invalid("comment", fmt.Sprintf("must be at most %d characters (it has %d)", MaxSilenceComment, n))
	}
	return s, nil
}

// of is the list a matcher key's value must be in; nil when any value may be (a label).
func (v Vocabulary) of(key string) []string {
	switch key {
	case "kind":
		return v.Kinds
	case "severity":
		return v.Severities
	}
	return nil
}
