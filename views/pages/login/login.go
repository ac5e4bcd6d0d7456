// Package login renders the sign-in page of auth.mode basic.
package login

import "github.com/redrive/redrive/views/layout"

// Page is the sign-in form.
type Page struct {
	Meta layout.Meta
	// User is the user name to prefill (after a failed attempt); "" leaves the field empty.
	User string
	// Next is the local path to return to after signing in; "" means the overview.
	Next string
	// Error is why the last attempt failed, shown above the form; "" shows nothing.
	Error string
}
