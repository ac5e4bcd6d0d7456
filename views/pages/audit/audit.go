// Package audit renders the audit log page.
package audit

import (
	"strconv"
	"time"

	"github.com/redrive/redrive/views/layout"
)

// Page is the audit log with its filters.
type Page struct {
	Meta     layout.Meta
	Filters  Filters
	Outcomes []string // what the outcome filter offers
	Rows     []Row
	Error    string
	NextURL  string
}

// Filters are the current filter values, as typed.
type Filters struct {
	Actor   string
	Action  string
	Outcome string
	Target  string
	Since   string
	Until   string
}

// Row is one audit entry.
type Row struct {
	ID       int64
	At       time.Time
	Actor    string
	Role     string
	SourceIP string
	Action   string
	Target   string
	Count    *int64
	Reason   string
	Outcome  string
	Error    string
}

func count(n *int64) string {
	if n == nil {
		return "—"
	}
	return strconv.FormatInt(*n, 10)
}

func outcomeTone(o string) string {
	switch o {
	case "ok":
		return "OK"
	case "denied":
		return "STALL"
	}
	return "ERROR"
}
