package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/term"

	"github.com/redrive/redrive/ops/access"
)

// hashPasswordCommand prints the bcrypt hash of a password for auth.users[].password_hash. The
// password is read from stdin: without echo, and twice, when stdin is a terminal; else its first
// line (for scripts: `printf %s "$PW" | console hash-password`).
func hashPasswordCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hash-password", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cost := fs.Int("cost", 12, "bcrypt cost: each step doubles the work of checking a password (4–31)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cost < bcrypt.MinCost || *cost > bcrypt.MaxCost {
		return fmt.Errorf("hash-password: --cost must be between %d and %d", bcrypt.MinCost, bcrypt.MaxCost)
	}
	password, err := readPassword(stdin, stderr)
	if err != nil {
		return fmt.Errorf("hash-password: %w", err)
	}
	switch {
	case len(password) == 0:
		return errors.New("hash-password: the password is empty")
	case len(password) > 72:
		return errors.New("hash-password: bcrypt reads at most 72 bytes of a password; use a shorter one")
	}
	hash, err := bcrypt.GenerateFromPassword(password, *cost)
	if err != nil {
		return fmt.Errorf("hash-password: %w", err)
	}
	_, err = fmt.Fprintln(stdout, string(hash))
	return err
}

func readPassword(stdin io.Reader, prompt io.Writer) ([]byte, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "Password: ")
		first, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return nil, err
		}
		fmt.Fprint(prompt, "Password again: ")
		again, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(first, again) {
			return nil, errors.New("the two passwords differ")
		}
		return first, nil
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return []byte(strings.TrimRight(line, "\r\n")), nil
}

// tokenPrefix marks Redrive API tokens, so that secret scanners and people recognise one.
const tokenPrefix = "rdv_"

// hashTokenCommand makes a new random API token and prints it with its SHA-256 and the
// auth.tokens entry to paste into the config. The token itself is stored nowhere.
func hashTokenCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hash-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "script", "the token's name in auth.tokens (the audit log's actor is token:NAME)")
	role := fs.String("role", access.Viewer.String(), "the token's role: viewer, operator or admin")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if _, err := access.ParseRole(*role); err != nil {
		return fmt.Errorf("hash-token: --role must be viewer, operator or admin, got %q", *role)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("hash-token: %w", err)
	}
	token := tokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(token))
	_, err := fmt.Fprintf(stdout, "token:  %s\nsha256: %s\n\n# Give the token to the script (Authorization: Bearer <token>); it is not shown again.\n"+
		"# Add this under auth.tokens:\n- {name: %q, role: %s, sha256: %s}\n", token, hex.EncodeToString(sum[:]),
		*name, *role, hex.EncodeToString(sum[:]))
	return err
}
