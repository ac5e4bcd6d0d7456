//go:build race

package replay_test

// raceSlowdown is how much more time a timed test allows when it runs under the race detector,
// which makes a plan's CPU-bound work about five times slower (a plan of 100,000 Kafka dead letters:
// 1.7 s as built, 8.9 s under -race alone, 17.5 s beside the other packages' tests on 2 cores). A
// bound the product promises is met as built (docs/benchmarks.md); under -race the test still
// catches a plan that stops scaling.
const raceSlowdown = 3
