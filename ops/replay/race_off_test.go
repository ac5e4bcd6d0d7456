//go:build !race

package replay_test

// raceSlowdown: see race_on_test.go. Built without the race detector, a timed test allows what the
// product promises.
const raceSlowdown = 1
