package paths

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// roots are the first segments of the console's own routes: a string starting with one of them
// outside this package is a hand-written link or pattern, which drifts from its route.
var roots = []string{"/kafka", "/rabbitmq", "/outboxes", "/replays", "/api/v1", "/api/openapi.json", "/audit",
	"/notifications", "/doctor", "/trace", "/login", "/logout", "/healthz", "/readyz", "/metrics"}

// consolePath reports whether s is, or starts with, a console route: a root followed by the end,
// a "/", a query or a fragment.
func consolePath(s string) bool {
	for _, r := range roots {
		if rest, ok := strings.CutPrefix(s, r); ok && (rest == "" || strings.ContainsRune("/?#", rune(rest[0]))) {
			return true
		}
	}
	return false
}

// A templ attribute or expression: the path right after a quote.
var templPath = regexp.MustCompile("[\"'`](/[^\"'`\\s]*)")

// No Go or templ source outside this package writes a console path by hand: every link, redirect,
// form action and route pattern comes from here. Tests are allowed (they state the URLs a client
// types), and so is web/openapi.yaml (the published document, checked against the route table by
// its own test).
func TestNoHandWrittenConsolePaths(t *testing.T) {
	root := ".."
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal("the module root is not the parent of paths/")
	}
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "paths":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, "_test.go") {
			return nil
		}
		switch filepath.Ext(p) {
		case ".go":
			checked++
			for _, lit := range goStrings(t, p) {
				if consolePath(lit.text) {
					t.Errorf("%s:%d: %q is a console path written by hand: use the paths package", p, lit.line, lit.text)
				}
			}
		case ".templ":
			checked++
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(src), "\n") {
				for _, m := range templPath.FindAllStringSubmatch(line, -1) {
					if consolePath(m[1]) {
						t.Errorf("%s:%d: %q is a console path written by hand: use the paths package", p, i+1, m[1])
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d source files checked: the walk missed the tree", checked)
	}
}

type goString struct {
	text string
	line int
}

// goStrings are the string literals of a Go file (comments are not code, and are skipped).
func goStrings(t *testing.T, path string) []goString {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(path, -1, len(src)), src, func(pos token.Position, msg string) { t.Errorf("%s: %s", pos, msg) }, 0)
	var out []goString
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok != token.STRING {
			continue
		}
		if v, err := strconv.Unquote(lit); err == nil {
			out = append(out, goString{v, fset.Position(pos).Line})
		}
	}
}

func TestConsolePath(t *testing.T) {
	for s, want := range map[string]bool{
		"/kafka": true, "/kafka/main": true, "/replays?x=1": true, "/api/v1/overview": true, "/audit#top": true,
		"/kafkaesque": false, "/api/overview": false, "/api/": false, "kafka/main/groups/x": false, "/": false,
		"/static/app.css": false, "sign in at /login": false,
	} {
		if got := consolePath(s); got != want {
			t.Errorf("consolePath(%q) = %v; want %v", s, got, want)
		}
	}
}
