// Command rabbittests prints a `go test -run` pattern that selects the tests of a package folder
// that use the test RabbitMQ: the Test functions that reach rabbittest.Env (directly, or through
// Admin, NewVhost, Config or ReadBack, or through the package's own helpers). `make test-rabbitmq4`
// runs those of cmd/console again on RabbitMQ 4.0 — the package's whole run is too long to repeat —
// and a list kept by hand would miss the next RabbitMQ test.
//
//	go run ./scripts/rabbittests ./cmd/console   →   ^(TestArchiveRestoreBothWays|…)$
//
// Calls are matched by name within the package's files, so a helper that shares its name with
// one that uses the broker selects a test too many, never one too few.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// brokerCalls are the ops/rabbittest functions that read the test broker's address.
var brokerCalls = map[string]bool{"Env": true, "Admin": true, "NewVhost": true, "Config": true, "ReadBack": true}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: rabbittests PACKAGE-FOLDER")
		os.Exit(2)
	}
	tests, err := brokerTests(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "rabbittests:", err)
		os.Exit(1)
	}
	if len(tests) == 0 {
		fmt.Fprintf(os.Stderr, "rabbittests: no test in %s uses the test RabbitMQ\n", os.Args[1])
		os.Exit(1)
	}
	fmt.Printf("^(%s)$\n", strings.Join(tests, "|"))
}

// brokerTests returns the names of the Test functions in dir's _test.go files that use the test
// broker, sorted.
func brokerTests(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	calls := map[string]map[string]bool{} // function or method name → the names it calls
	uses := map[string]bool{}             // function or method name → it uses the broker
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			name := fd.Name.Name
			if calls[name] == nil {
				calls[name] = map[string]bool{}
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.SelectorExpr:
					if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "rabbittest" && brokerCalls[x.Sel.Name] {
						uses[name] = true
					}
					calls[name][x.Sel.Name] = true // a method, or a function passed as a value
				case *ast.Ident:
					calls[name][x.Name] = true
				}
				return true
			})
		}
	}
	// Whoever calls a function that uses the broker uses it too.
	for changed := true; changed; {
		changed = false
		for f, callees := range calls {
			if uses[f] {
				continue
			}
			for c := range callees {
				if uses[c] {
					uses[f], changed = true, true
					break
				}
			}
		}
	}
	var tests []string
	for f := range uses {
		if strings.HasPrefix(f, "Test") && f != "TestMain" {
			tests = append(tests, f)
		}
	}
	slices.Sort(tests)
	return tests, nil
}
