package access

import "time"

// Session is a signed-in user's session (auth.mode basic). The store knows it by the SHA-256 of
// the cookie's token, never by the token.
type Session struct {
	User          string
	Role          string
	CreatedAt     time.Time
	IdleExpiresAt time.Time // the session ends here unless it is used before
	ExpiresAt     time.Time // the session ends here in any case
}
