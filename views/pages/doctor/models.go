// Package doctor renders the /doctor page: every configured dependency checked, one row per check.
package doctor

import (
	"strings"

	"github.com/redrive/redrive/views/layout"
)

// Page is one doctor run.
type Page struct {
	Meta     layout.Meta
	Rows     []Row
	OK       int
	Warnings int
	Failed   int
	Took     string // "1.2s"
}

// Row is one check.
type Row struct {
	Status string // ok, warning, failed
	Target string
	Check  string
	Detail string
	Fix    string
}

func tone(status string) string {
	switch status {
	case "ok":
		return "ok"
	case "warning":
		return "warn"
	}
	return "danger"
}

func lines(s string) []string { return strings.Split(s, "\n") }
