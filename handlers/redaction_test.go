package handlers

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/redact"
)

// ?reveal= takes true or false; anything else is a 400 naming the parameter, for every role, and
// shows nothing unmasked.
func TestRedactionForReadsReveal(t *testing.T) {
	rules, err := redact.New(nil, []string{"$.email"})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	for _, q := range []string{"?reveal=maybe", "?reveal=1x"} {
		c := e.NewContext(httptest.NewRequest("GET", "/x"+q, nil), httptest.NewRecorder())
		SetActor(c, access.Actor{Name: "root", Role: access.Admin})
		if red, err := redactionFor(c, rules, "x"); !errors.Is(err, ops.ErrInvalid) || red != nil {
			t.Errorf("%s: %v %v; want ErrInvalid", q, red, err)
		}
	}
	c := e.NewContext(httptest.NewRequest("GET", "/x?reveal=false", nil), httptest.NewRecorder())
	SetActor(c, access.Actor{Name: "vera", Role: access.Viewer})
	if red, err := redactionFor(c, rules, "x"); err != nil || red == nil {
		t.Errorf("reveal=false: %v %v; want the rules", red, err)
	}
}
