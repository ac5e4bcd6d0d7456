package testenv

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Fatalf records the message and ends the calling goroutine, as
// the testing package's does.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Var on a recorder in its own goroutine, so that a Fatalf ends only that goroutine.
func run(t *testing.T, name string) (value, failed string) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		value = Var(r, name, "PostgreSQL")
	}()
	<-done
	return value, r.failed
}

func TestVarReadsTheVariable(t *testing.T) {
	t.Setenv("REDRIVE_TEST_TESTENV", "postgres://x@127.0.0.1/y")
	if v, failed := run(t, "REDRIVE_TEST_TESTENV"); v != "postgres://x@127.0.0.1/y" || failed != "" {
		t.Fatalf("Var = %q (failed %q), want the variable's value", v, failed)
	}
}

func TestVarFailsWhenTheVariableIsMissing(t *testing.T) {
	t.Setenv("REDRIVE_TEST_TESTENV", "")
	_, failed := run(t, "REDRIVE_TEST_TESTENV")
	for _, want := range []string{"REDRIVE_TEST_TESTENV is not set", "make test", "PostgreSQL"} {
		if !strings.Contains(failed, want) {
			t.Errorf("failure %q does not say %q", failed, want)
		}
	}
}

func TestNameIsFreshAndAnIdentifier(t *testing.T) {
	a, b := Name(), Name()
	if a == b {
		t.Fatalf("two names are both %q", a)
	}
	for _, n := range []string{a, b} {
		if !regexp.MustCompile(`^t_[0-9a-f]{12}$`).MatchString(n) {
			t.Errorf("name %q is not t_ and 12 hex digits", n)
		}
	}
}
