// Package notifications renders the delivery log of notifications, the channels (with a test
// button each) and the silences.
package notifications

import (
	"time"

	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
)

// Page is the /notifications page.
type Page struct {
	Meta     layout.Meta
	Channels []string
	Rows     []Row
	Silences []Silence
	Kinds    []string // the problem kinds a silence may name (its form offers only these)
	Error    string   // the log could not be read
	Flash    string   // the outcome of a test or a silence just set
	// SilenceLimits says what the signed-in user may silence, and for how long (notify.silences);
	// "" when nothing bounds it.
	SilenceLimits string
	// What the signed-in user may do here, as the routes allow: send a test notification, set a
	// silence, end one. The page shows each form only when it is offered.
	Test, Silence, End components.Offer
}

// Row is one notification of the delivery log.
type Row struct {
	ID        int64
	At        time.Time
	Channel   string
	State     string // firing | resolved | test
	Key       string
	Title     string
	Link      string
	Attempts  int
	Delivered *time.Time
	GaveUp    bool
	LastError string
}

// Silence is an active silence.
type Silence struct {
	ID        int64
	Matchers  string
	EndsAt    time.Time
	Comment   string
	CreatedBy string
}

// Outcome is a row's delivery state for its badge.
func (r Row) Outcome() string {
	switch {
	case r.Delivered != nil:
		return "delivered"
	case r.GaveUp:
		return "failed"
	case r.Attempts > 0:
		return "retrying"
	}
	return "pending"
}
