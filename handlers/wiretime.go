package handlers

import "time"

// The API gives every time in UTC, and a time that is not known as null: these two say so once
// for every area's JSON.

// inUTC is t in UTC; nil stays nil.
func inUTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// knownUTC is t in UTC, or nil when t is zero (never sampled, never started, no lease).
func knownUTC(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return inUTC(&t)
}
