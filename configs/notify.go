package configs

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"time"
)

// Notify is notifications (issue 18): which problems (ops/health) are sent to which channels,
// when they fire and when they resolve. Zero: no notifications.
type Notify struct {
	// Interval is how often the leading replica evaluates the problems. Default 30s.
	Interval Duration `yaml:"interval"`
	// NewGroupWindow: a dead-letter error group (exception type or reason on a DLT/DLQ) is new
	// when it was not seen in this window; it fires a new_error_group event. Default 24h.
	NewGroupWindow Duration `yaml:"new_group_window"`
	// BaseURL is the console's address as people reach it, for absolute links in messages
	// ("https://redrive.example.com"). Empty: links are paths.
	BaseURL string `yaml:"base_url"`
	// MaxAttempts bounds the deliveries of one notification (backoff 1s, 2s, 4s… up to 5 min).
	// Default 10.
	MaxAttempts int             `yaml:"max_attempts"`
	Channels    []NotifyChannel `yaml:"channels"`
	Rules       []NotifyRule    `yaml:"rules"`
	// Silences bound what one person may silence, by role.
	Silences NotifySilences `yaml:"silences"`
}

// NotifySilences bound silences by the role of who sets them: how long one may last, and which
// severities an operator may silence (an admin may silence any). A silence past them is refused
// (403, audited) in words that name the key.
type NotifySilences struct {
	// OperatorMax is the longest silence an operator may set. Default 4h.
	OperatorMax Duration `yaml:"operator_max"`
	// AdminMax is the longest silence an admin may set. Default 720h (30 days), at most that.
	AdminMax Duration `yaml:"admin_max"`
	// OperatorSeverities are the severities an operator's silence may cover: it must name one of
	// them as its severity matcher. Default [warning, info]: only an admin silences critical
	// problems (or all severities at once).
	OperatorSeverities []string `yaml:"operator_severities"`
}

// NotifyChannel is one destination. Type is webhook, slack or email.
type NotifyChannel struct {
	Name string `yaml:"name"` // required, unique
	Type string `yaml:"type"` // webhook | slack | email
	// URL is the webhook's or the Slack incoming webhook's address (a secret: Slack's embeds its token).
	URL Secret `yaml:"url"`
	// Secret, when set on a webhook, signs each body: header SignatureHeader is
	// "sha256=" + hex(HMAC-SHA256(secret, body)).
	Secret Secret `yaml:"secret"`
	// SignatureHeader names the signature header; default X-Redrive-Signature.
	SignatureHeader string `yaml:"signature_header"`
	// SMTP is the mail server of an email channel.
	SMTP NotifySMTP `yaml:"smtp"`
}

// NotifySMTP is an email channel's server and envelope.
type NotifySMTP struct {
	Host     string   `yaml:"host"` // required
	Port     int      `yaml:"port"` // default 587
	Username string   `yaml:"username"`
	Password Secret   `yaml:"password"`
	From     string   `yaml:"from"` // required
	To       []string `yaml:"to"`   // required
	// StartTLS upgrades the connection before authenticating; default true. Without it the
	// password is only sent to a server on loopback.
	StartTLS *bool `yaml:"starttls"`
	// CAFile verifies the server's certificate against these PEM roots instead of the system's.
	CAFile string `yaml:"ca_file"`
}

// NotifyRule routes the problems it matches to channels.
type NotifyRule struct {
	Match    NotifyMatch `yaml:"match"`
	Channels []string    `yaml:"channels"` // required: names of notify.channels
	// RepeatEvery re-sends a problem that still fires after this long; 0 never repeats.
	RepeatEvery Duration `yaml:"repeat_every"`
}

// NotifyMatch selects problems; an empty field matches anything, every set one must match.
type NotifyMatch struct {
	Kind     string `yaml:"kind"`
	Cluster  string `yaml:"cluster"`
	Topic    string `yaml:"topic"`
	Queue    string `yaml:"queue"`
	Group    string `yaml:"group"`
	Severity string `yaml:"severity"`
}

// maxSilence is the longest silence anyone may set (ops/alerts.MaxSilence).
const maxSilence = 30 * 24 * time.Hour

func (n *Notify) applyDefaults() {
	n.Interval = cmp.Or(n.Interval, Duration(30*time.Second))
	n.NewGroupWindow = cmp.Or(n.NewGroupWindow, Duration(24*time.Hour))
	n.MaxAttempts = cmp.Or(n.MaxAttempts, 10)
	n.Silences.OperatorMax = cmp.Or(n.Silences.OperatorMax, Duration(4*time.Hour))
	n.Silences.AdminMax = cmp.Or(n.Silences.AdminMax, Duration(maxSilence))
	if n.Silences.OperatorSeverities == nil {
		n.Silences.OperatorSeverities = []string{"warning", "info"}
	}
	for i := range n.Channels {
		c := &n.Channels[i]
		c.SignatureHeader = cmp.Or(c.SignatureHeader, "X-Redrive-Signature")
		if c.Type == "email" {
			c.SMTP.Port = cmp.Or(c.SMTP.Port, 587)
			if c.SMTP.StartTLS == nil {
				t := true
				c.SMTP.StartTLS = &t
			}
		}
	}
}

func (n *Notify) validate(bad func(key, format string, args ...any)) {
	if n.Interval < Duration(time.Second) {
		bad("notify.interval", "must be at least 1s")
	}
	if n.NewGroupWindow < 0 {
		bad("notify.new_group_window", "must not be negative")
	}
	if n.MaxAttempts < 1 {
		bad("notify.max_attempts", "must be at least 1")
	}
	for key, d := range map[string]Duration{"notify.silences.operator_max": n.Silences.OperatorMax, "notify.silences.admin_max": n.Silences.AdminMax} {
		if d < Duration(time.Minute) || d > Duration(maxSilence) {
			bad(key, "must be between 1m and 720h, got %s", time.Duration(d))
		}
	}
	if n.Silences.OperatorMax > n.Silences.AdminMax {
		bad("notify.silences.operator_max", "must not be longer than notify.silences.admin_max")
	}
	for i, sev := range n.Silences.OperatorSeverities {
		switch sev {
		case "critical", "warning", "info":
		default:
			bad(fmt.Sprintf("notify.silences.operator_severities[%d]", i), "must be critical, warning or info, got %q", sev)
		}
	}
	if n.BaseURL != "" {
		if u, err := url.Parse(n.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("notify.base_url", "must be an http(s) URL, got %q", n.BaseURL)
		}
	}
	var names []string
	for i, c := range n.Channels {
		key := fmt.Sprintf("notify.channels[%d]", i)
		switch {
		case c.Name == "":
			bad(key+".name", "required")
		case slices.Contains(names, c.Name):
			bad(key+".name", "%q is used by another channel", c.Name)
		}
		names = append(names, c.Name)
		switch c.Type {
		case "webhook", "slack":
			if u, err := url.Parse(string(c.URL)); c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(key+".url", "required: an http(s) URL")
			}
		case "email":
			if c.SMTP.Host == "" {
				bad(key+".smtp.host", "required")
			}
			if c.SMTP.From == "" {
				bad(key+".smtp.from", "required")
			}
			if len(c.SMTP.To) == 0 {
				bad(key+".smtp.to", "required: at least one address")
			}
			if c.SMTP.Port < 1 || c.SMTP.Port > 65535 {
				bad(key+".smtp.port", "must be 1-65535")
			}
		default:
			bad(key+".type", "must be webhook, slack or email, got %q", c.Type)
		}
	}
	for i, r := range n.Rules {
		key := fmt.Sprintf("notify.rules[%d]", i)
		if len(r.Channels) == 0 {
			bad(key+".channels", "required: at least one channel name")
		}
		for _, ch := range r.Channels {
			if !slices.Contains(names, ch) {
				bad(key+".channels", "%q is not a channel of notify.channels", ch)
			}
		}
		if r.RepeatEvery < 0 {
			bad(key+".repeat_every", "must not be negative")
		}
		switch r.Match.Severity {
		case "", "critical", "warning", "info":
		default:
			bad(key+".match.severity", "must be critical, warning or info, got %q", r.Match.Severity)
		}
	}
}
