// Package testenv reads the addresses of the services `make test` starts (cmd/devstack) from the
// environment, and names what a test creates there, for the test-support packages of each service
// (ops/pgtest, ops/mysqltest, ops/rabbittest). A test that needs a service fails when its variable
// is missing, never skips: a suite that passes because it did not run proves nothing.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
)

// Var returns the environment variable name, which `make test` sets to reach service ("PostgreSQL",
// "RabbitMQ"), failing tb (never skipping it) when it is not set.
func Var(tb testing.TB, name, service string) string {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		tb.Fatalf("%s is not set: run the tests with `make test`, which starts %s on loopback "+
			"(or `go run ./cmd/devstack up` and export the lines it prints)", name, service)
	}
	return v
}

// Name is a fresh name for one test's own database or vhost ("t_" and 12 hex digits), which no
// other test running on the same service has.
func Name() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "t_" + hex.EncodeToString(b)
}
