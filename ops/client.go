package ops

import (
	"context"
	"strings"

	"github.com/redrive/redrive/ops/payload"
)

// Client is where a request came from, as the audit log records it.
type Client struct {
	Addr      string
	UserAgent string
}

type clientKey struct{}

// WithClient carries c with ctx, so that use cases deep below a request (a replay plan, start,
// approval or cancellation) audit where it came from without every signature naming it.
func WithClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, Client{Addr: CleanText(c.Addr, 64), UserAgent: CleanText(c.UserAgent, 512)})
}

// ClientOf is the client WithClient carried; zero when none did.
func ClientOf(ctx context.Context) Client {
	c, _ := ctx.Value(clientKey{}).(Client)
	return c
}

// CleanText makes text written by someone else safe to store in a PostgreSQL text column: invalid
// UTF-8 becomes U+FFFD, NUL (which text cannot hold) is dropped, and it is cut at max bytes on a
// rune boundary.
func CleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	s, _ = payload.Cut(s, max)
	return s
}
