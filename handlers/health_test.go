package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// The public /readyz names each dependency and says whether it is ok — not why, which may name
// a database's host, port, user or database.
func TestReadyzSaysNamesAndOKOnly(t *testing.T) {
	secret := `failed to connect to user=redrive database=orders host=10.1.2.3 port=5432: password authentication failed`
	h := NewHealth([]Check{
		{Name: "store", Ping: func(context.Context) error { return nil }},
		{Name: "outbox/orders", Ping: func(context.Context) error { return errors.New(secret) }},
	})
	rec, err := callAPI(t, h.Readyz, "/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := rec.Body.String()
	want := `{"status":"unavailable","dependencies":[{"name":"store","ok":true},{"name":"outbox/orders","ok":false}]}`
	if rec.Code != http.StatusServiceUnavailable || strings.TrimSpace(body) != want {
		t.Fatalf("%d %s", rec.Code, body)
	}
	for _, leak := range []string{"redrive", "10.1.2.3", "5432", "orders host", "password", "error"} {
		if strings.Contains(body, leak) {
			t.Errorf("/readyz says %q", leak)
		}
	}
}
