package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/pgtest"
)

// TestSignInCountsFailuresOnly: the sign-in throttle counted successful sign-ins (the sixth
// correct sign-in of a minute got 429), and anyone could keep a known user locked out with one
// wrong password a minute from anywhere. Now twenty correct sign-ins in a row all succeed; an
// attacker guessing otto's password from another address is throttled there, while otto signs in
// from his own address; many addresses guessing one user are throttled together, but not the
// address the user signed in from; and every throttled attempt is audited (at the bounded rate).
// Addresses come from X-Forwarded-For, believed from the test's loopback proxy.
func TestSignInCountsFailuresOnly(t *testing.T) {
	t.Parallel()
	storeDSN := pgtest.NewDatabase(t)
	base := startConsole(t, basicAuth("  trusted_proxies: [127.0.0.1]\n")+fmt.Sprintf("store: {dsn: %q}\n", storeDSN))
	signIn := func(from, user, password string) int {
		t.Helper()
		client := browserlike()
		csrf := loginForm(t, client, base)
		form := url.Values{"username": {user}, "password": {password}, "_csrf": {csrf}, "next": {"/"}}
		req, err := http.NewRequest("POST", base+"/login", strings.NewReader(form.Encode()))
		mustDo(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", from)
		resp, err := client.Do(req)
		mustDo(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}

	for i := range 20 {
		if s := signIn("192.0.2.10", "vera", "pw-vera"); s != http.StatusSeeOther {
			t.Fatalf("vera's correct sign-in %d: %d", i+1, s)
		}
	}

	if s := signIn("192.0.2.20", "otto", "pw-otto"); s != http.StatusSeeOther { // otto's own address
		t.Fatalf("otto: %d", s)
	}
	var statuses []int
	for range 8 {
		statuses = append(statuses, signIn("203.0.113.9", "otto", "guess"))
	}
	if want := []int{401, 401, 401, 401, 401, 429, 429, 429}; fmt.Sprint(statuses) != fmt.Sprint(want) {
		t.Errorf("the attacker's guesses: %v, want %v (per_user burst 5 for that address)", statuses, want)
	}
	if s := signIn("192.0.2.20", "otto", "pw-otto"); s != http.StatusSeeOther {
		t.Errorf("otto at his own address while guessed at from elsewhere: %d, want 303", s)
	}

	// Guesses at ada from 25 addresses, two each: past per_user_new_addresses (20) they are
	// throttled, wherever they come from; ada, at the address she signed in from, is not.
	if s := signIn("192.0.2.30", "ada", "pw-ada"); s != http.StatusSeeOther {
		t.Fatalf("ada: %d", s)
	}
	refused := 0
	for i := range 25 {
		for range 2 {
			if signIn(fmt.Sprintf("198.51.100.%d", i), "ada", "guess") == http.StatusTooManyRequests {
				refused++
			}
		}
	}
	if refused != 30 {
		t.Errorf("%d of 50 guesses at ada from 25 addresses throttled, want 30 (past the 20 per_user_new_addresses allows)", refused)
	}
	if s := signIn("192.0.2.30", "ada", "pw-ada"); s != http.StatusSeeOther {
		t.Errorf("ada at her own address while guessed at from many: %d, want 303", s)
	}
	if s := signIn("192.0.2.31", "ada", "pw-ada"); s != http.StatusTooManyRequests {
		t.Errorf("ada from a new address while guessed at from many: %d, want 429", s)
	}

	db := pgtest.Conn(t, storeDSN)
	var throttled int
	mustDo(t, db.QueryRow(t.Context(), `SELECT count(*) FROM redrive.audit_log
		WHERE action = 'auth.login' AND outcome = 'denied' AND reason LIKE 'throttled%'`).Scan(&throttled))
	if throttled == 0 {
		t.Error("no throttled sign-in is in the audit log")
	}
}
