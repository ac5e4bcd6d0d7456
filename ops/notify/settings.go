package notify

import "time"

// Settings are what the notifier is told: how often to evaluate, where links point, how often to
// retry, the channels and the rules that route problems to them. The console reads them from the
// notify section of its config file (cmd/console), which checks them and fills their defaults.
type Settings struct {
	// Interval is how often the leading replica evaluates the problems; zero means 30 s.
	Interval time.Duration
	// BaseURL is the console's address as people reach it, for absolute links in messages; empty:
	// links are paths.
	BaseURL string
	// MaxAttempts bounds the deliveries of one notification; zero means 10.
	MaxAttempts int
	Channels    []ChannelSettings
	Rules       []Rule
}

// ChannelSettings describe one destination. Type is webhook, slack or email.
type ChannelSettings struct {
	Name string
	Type string // webhook | slack | email
	// URL is the webhook's or the Slack incoming webhook's address. It may hold a token (Slack's
	// does): errors name its host only.
	URL string
	// Secret, when set on a webhook, signs each body: header SignatureHeader is Sign(Secret, body).
	Secret          string
	SignatureHeader string
	SMTP            SMTP // an email channel's server
}

// SMTP is an email channel's server and envelope.
type SMTP struct {
	Host     string
	Port     int
	Username string
	Password string
	From     string
	To       []string
	// NoStartTLS sends in clear; the zero value upgrades the connection with STARTTLS before
	// authenticating, and refuses a server that does not offer it.
	NoStartTLS bool
	// CAFile verifies the server's certificate against these PEM roots instead of the system's.
	CAFile string
}

// Rule routes the problems it matches to channels.
type Rule struct {
	Match    Match
	Channels []string // names of Settings.Channels
	// RepeatEvery re-sends a problem that still fires after this long; 0 never repeats.
	RepeatEvery time.Duration
}

// Match selects problems; an empty field matches anything, every set one must match.
type Match struct {
	Kind     string
	Cluster  string
	Topic    string
	Queue    string
	Group    string
	Severity string
}
