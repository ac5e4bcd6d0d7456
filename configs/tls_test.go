package configs

import (
	"errors"
	"testing"

	"github.com/redrive/redrive/ops"
)

func TestTLSConfig(t *testing.T) {
	tc, err := (&TLS{Enabled: true, InsecureSkipVerify: true}).ClientConfig()
	if err != nil || !tc.InsecureSkipVerify {
		t.Fatalf("%+v %v", tc, err)
	}
	if _, err := (&TLS{CAFile: "/nonexistent/ca.pem"}).ClientConfig(); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("missing CA file: %v", err)
	}
}
