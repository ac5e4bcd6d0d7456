#!/usr/bin/env bash
# Runs every Fuzz* target of the module for FUZZTIME each (default 50000x: a count of executions,
# which has no wall-clock deadline to race the workers); fails on the first crash.
# The seed corpora live in each package's testdata/fuzz and run as plain tests in `go test` too.
# Each new interesting input is minimized for at most 2000 executions (Go's default is 60 s each):
# what a run finds stays in the build cache, not in the repository, so a smaller copy is worth
# nothing here, and the default's minutes of stalls made one target take 6 min instead of 1.
set -euo pipefail
fuzztime=${FUZZTIME:-50000x}
go test -list '^Fuzz' ./... |
	awk '/^Fuzz/ { names = names " " $1; next }
	     /^ok/   { n = split(names, a, " "); for (i = 1; i <= n; i++) print $2, a[i]; names = "" }' |
	while read -r pkg fn; do
		echo "fuzz $pkg $fn ($fuzztime)"
		go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2000x "$pkg"
	done
