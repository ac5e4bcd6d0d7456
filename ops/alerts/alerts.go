// Package alerts is the notifier's record as the store keeps it: an alert per problem key (its
// firing episodes), the notifications each episode gives rise to on each channel (the delivery
// log, with retries), and silences. The notifier (ops/notify) evaluates and delivers; the store
// (ops/store) keeps them in PostgreSQL; it imports nothing of the console but ops' error kinds, so
// both sides can. What a silence may be is decided here (SilenceRequest.Silence).
package alerts

import (
	"encoding/json"
	"time"
)

// Alert is the notifier's record of one problem key: what it last looked like, its episode
// (one per firing, counted from 1) and whether it fires now.
type Alert struct {
	Key, Kind, Severity, Title, Summary, Link string
	Labels                                    map[string]string
	Since                                     time.Time
	Episode                                   int
	Firing                                    bool
	FiredAt                                   time.Time
	ResolvedAt                                *time.Time
}

// Sent is the newest firing notification of an alert's current episode on one channel.
type Sent struct {
	Key     string
	Channel string
	Seq     int
	At      time.Time
}

// NewNotification is a notification to record (and later deliver).
type NewNotification struct {
	Key     string
	Episode int
	State   string // firing | resolved | test
	Seq     int
	Channel string
	Event   json.RawMessage
}

// Notification is one row of the delivery log.
type Notification struct {
	ID            int64
	Key           string
	Episode       int
	State         string
	Seq           int
	Channel       string
	Event         json.RawMessage
	CreatedAt     time.Time
	Attempts      int
	NextAttemptAt time.Time
	DeliveredAt   *time.Time
	FailedAt      *time.Time
	LastError     string
}

// Round is what one evaluation of the notifier writes: alerts that fire (new or again) or
// are updated, alerts that resolved, and the notifications they give rise to.
type Round struct {
	Alerts        []Alert // upserted as given
	Notifications []NewNotification
}

// Silence holds the notifications of the problems whose labels (and kind, severity) match all of
// Matchers until EndsAt.
type Silence struct {
	ID        int64
	Matchers  map[string]string
	EndsAt    time.Time
	Comment   string
	CreatedBy string
	CreatedAt time.Time
}
