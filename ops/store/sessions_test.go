package store_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/redrive/redrive/ops"
)

func TestSessions(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	tok := sha256.Sum256([]byte("token"))

	created, err := st.CreateSession(ctx, tok[:], "alice", "operator", time.Second, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := created.ExpiresAt.Sub(created.IdleExpiresAt); got < 1900*time.Millisecond || got > 2100*time.Millisecond {
		t.Errorf("idle expiry %v before the absolute one, want 2s", got)
	}

	t.Run("Read", func(t *testing.T) {
		s, err := st.TouchSession(ctx, tok[:], time.Second, time.Hour)
		if err != nil || s.User != "alice" || s.Role != "operator" {
			t.Fatalf("%+v %v", s, err)
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		other := sha256.Sum256([]byte("other"))
		if _, err := st.TouchSession(ctx, other[:], time.Second, 0); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("unknown token: %v", err)
		}
	})
	t.Run("IdleIsExtendedByUseButNotPastAbsolute", func(t *testing.T) {
		deadline := created.ExpiresAt
		for time.Until(deadline) > 300*time.Millisecond {
			time.Sleep(300 * time.Millisecond)
			s, err := st.TouchSession(ctx, tok[:], time.Second, 0)
			if err != nil {
				t.Fatalf("used every 300ms, the session ended %v before its absolute expiry: %v", time.Until(deadline), err)
			}
			if s.IdleExpiresAt.After(s.ExpiresAt) {
				t.Fatalf("idle expiry %v past the absolute %v", s.IdleExpiresAt, s.ExpiresAt)
			}
		}
		time.Sleep(time.Until(deadline) + 50*time.Millisecond)
		if _, err := st.TouchSession(ctx, tok[:], time.Second, 0); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("past the absolute expiry: %v", err)
		}
	})
	t.Run("IdleExpiry", func(t *testing.T) {
		tok2 := sha256.Sum256([]byte("idle"))
		if _, err := st.CreateSession(ctx, tok2[:], "bob", "viewer", 500*time.Millisecond, time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
		if _, err := st.TouchSession(ctx, tok2[:], 500*time.Millisecond, 0); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("idle session still live: %v", err)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		tok3 := sha256.Sum256([]byte("bye"))
		if _, err := st.CreateSession(ctx, tok3[:], "carol", "admin", time.Hour, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteSession(ctx, tok3[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := st.TouchSession(ctx, tok3[:], time.Hour, 0); !errors.Is(err, ops.ErrNotFound) {
			t.Fatalf("deleted session still live: %v", err)
		}
		if err := st.DeleteSession(ctx, tok3[:]); err != nil {
			t.Fatalf("deleting twice: %v", err)
		}
	})
}
