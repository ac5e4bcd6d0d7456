// Package overview renders the "what is on fire" page.
package overview

import "time"

// Data is everything the overview shows.
type Data struct {
	CheckedAt    time.Time
	Problems     []Problem
	Dependencies []Dependency
}

// Problem is one thing on fire, linking to its page.
type Problem struct {
	Severity string // critical, warning, info
	Title    string
	Link     string
	Trend    string     // a history URL drawn as a sparkline of total_lag; "" for none
	Since    *time.Time // when it started as far as the data says; nil when it does not
}

// Dependency is one configured system's health.
type Dependency struct {
	Name  string
	OK    bool
	Error string
}

func severityTone(s string) string {
	switch s {
	case "critical":
		return "danger"
	case "info":
		return "info"
	}
	return "warn"
}
