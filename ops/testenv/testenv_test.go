package testenv

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

func TestVarReadsTheVariable(t *testing.T) {
	t.Setenv("REDRIVE_TEST_TESTENV", "postgres://x@127.0.0.1/y")
	if v := Var(t, "REDRIVE_TEST_TESTENV", "PostgreSQL"); v != "postgres://x@127.0.0.1/y" {
		t.Fatalf("Var = %q, want the variable's value", v)
	}
}

// TestVarFailsWhenTheVariableIsMissing runs itself again in a child process, where Var finds the
// variable empty: the child's test must fail (not skip), saying which variable and how to set it.
func TestVarFailsWhenTheVariableIsMissing(t *testing.T) {
	if os.Getenv("REDRIVE_TESTENV_CHILD") == "1" {
		Var(t, "REDRIVE_TEST_TESTENV", "PostgreSQL")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestVarFailsWhenTheVariableIsMissing$", "-test.v")
	cmd.Env = append(os.Environ(), "REDRIVE_TESTENV_CHILD=1", "REDRIVE_TEST_TESTENV=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child passed with the variable missing:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestVarFailsWhenTheVariableIsMissing", "REDRIVE_TEST_TESTENV is not set", "make test", "PostgreSQL"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output does not say %q:\n%s", want, out)
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
