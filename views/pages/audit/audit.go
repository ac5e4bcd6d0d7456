// Package audit renders the audit log page.
package audit

import (
	"strconv"
	"strings"
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

// targetID splits a target that names a replay job or plan ("replay/job_…", "replay-plan/plan_…")
// into its kind and the id a person copies to look it up; id is "" for any other target.
func targetID(target string) (kind, id string) {
	kind, id, ok := strings.Cut(target, "/")
	if !ok || (kind != "replay" && kind != "replay-plan") || id == "" || strings.Contains(id, "/") {
		return "", ""
	}
	return kind, id
}

// roleText is what the actor column says of a row's role: the role; "not signed in" for a
// request no one was signed in to (role none); "" when the row recorded none (it read
// "anonymous ()").
func roleText(actor, role string) string {
	switch role {
	case "":
		return ""
	case "none":
		if actor == "anonymous" {
			return "not signed in"
		}
	}
	return role
}

// neverMade says whether a replay.start row names a job that was never made: its start was
// refused or failed before the job existed, so its id leads nowhere (a 404).
func neverMade(action, outcome string) bool {
	return action == "replay.start" && (outcome == "denied" || outcome == "failed")
}
