package search

import (
	"sync"

	"github.com/redrive/redrive/ops"
)

// Slots bound how many of one kind of long request — exports, filter scans — run at once: per
// person (access.Actor.Person: a token's owner) and in all. Each running one holds broker reads,
// buffers and a goroutine for as long as it streams; fifty stalled exports once took the console
// from 76 to 542 MB. A request past a bound is refused (ops.ErrLimited, 429) in words that name
// the key to raise. Safe for concurrent use; the zero bounds (nil Slots) bound nothing. Slots
// live in one replica's memory: N replicas allow N times as many.
type Slots struct {
	what             string // "exports", "filter scans"
	perPerson, total int
	perKey, totalKey string
	mu               sync.Mutex
	running          map[string]int
	all              int
}

// NewSlots bounds what ("exports") to perPerson of one person and total in all, perKey and
// totalKey naming the config keys.
func NewSlots(what string, perPerson int, perKey string, total int, totalKey string) *Slots {
	return &Slots{what: what, perPerson: perPerson, total: total, perKey: perKey, totalKey: totalKey, running: map[string]int{}}
}

// Take takes a slot for person, or refuses: ops.ErrLimited naming the bound reached. release gives
// the slot back (once; later calls do nothing).
func (s *Slots) Take(person string) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.running[person] >= s.perPerson:
		return nil, ops.Limited("%d %s of yours are running, as many as one person may run at once (%s); "+
			"wait for one to end", s.running[person], s.what, s.perKey)
	case s.all >= s.total:
		return nil, ops.Limited("%d %s are running, as many as the console runs at once (%s); try again in a moment",
			s.all, s.what, s.totalKey)
	}
	s.running[person]++
	s.all++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.running[person]--; s.running[person] <= 0 {
				delete(s.running, person)
			}
			s.all--
		})
	}, nil
}

// Running is how many run now, in all.
func (s *Slots) Running() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all
}
