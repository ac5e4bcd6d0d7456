package ops

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The seam of docs/architecture.md: drivers (pgx, franz-go, amqp091, rabbit-hole, the MySQL
// driver) live only in adapters, and nothing outside the adapters and cmd/ imports a package that
// imports a driver, so that a new source kind is one adapter and the domain compiles without any
// broker. TestDriversOnlyInAdapters holds the line: issue 33 counted 33 such edges; there are none
// now, and a new one fails it.

const module = "github.com/redrive/redrive/"

// drivers are the import path prefixes of the client libraries of the systems Redrive operates on.
var drivers = []string{
	"github.com/jackc/pgx",
	"github.com/twmb/franz-go",
	"github.com/rabbitmq/amqp091-go",
	"github.com/michaelklishin/rabbit-hole",
	"github.com/go-sql-driver/mysql",
}

// isAdapter says whether a package may import a driver: the brokers' and databases' adapters and
// the packages that start or fake them for tests. The outbox and inbox domains are ops/outbox and
// ops/inbox; each package below them is one database's (and format's) adapter.
func isAdapter(pkg string) bool {
	switch pkg {
	case "ops/kafka", "ops/kafka/schema", "ops/rabbit", "ops/store", "ops/pgpool", "ops/pglock", "ops/mysqlpool":
		return true
	}
	return strings.HasPrefix(pkg, "cmd/") || strings.HasSuffix(pkg, "test") ||
		strings.HasPrefix(pkg, "ops/outbox/") || strings.HasPrefix(pkg, "ops/inbox/")
}

func TestDriversOnlyInAdapters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	imports := moduleImports(t)
	isDriver := func(path string) bool {
		return slices.ContainsFunc(drivers, func(d string) bool { return strings.HasPrefix(path, d) })
	}
	importsDriver := map[string]bool{}
	for pkg, deps := range imports {
		importsDriver[pkg] = slices.ContainsFunc(deps, isDriver)
	}
	var edges []string
	for pkg, deps := range imports {
		if isAdapter(pkg) {
			continue
		}
		if importsDriver[pkg] {
			edges = append(edges, pkg+" -> driver")
		}
		for _, dep := range deps {
			if dep, ok := strings.CutPrefix(dep, module); ok && importsDriver[dep] {
				edges = append(edges, pkg+" -> "+dep)
			}
		}
	}
	slices.Sort(edges)
	for _, e := range edges {
		t.Errorf("import edge into a driver: %s — declare what the package needs as an interface or a driver-free type in the domain and let the adapter provide it (docs/architecture.md)", e)
	}
	// The check reads what it thinks it reads: the adapters are seen importing their drivers.
	for _, adapter := range []string{"ops/kafka", "ops/rabbit", "ops/store", "ops/mysqlpool"} {
		if !importsDriver[adapter] {
			t.Errorf("%s is not seen importing a driver: go list's output was not read as expected", adapter)
		}
	}
}

// moduleImports reads, with go list, what each package of the module imports (not its tests),
// by the package's path inside the module.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			imports[strings.TrimPrefix(fields[0], module)] = fields[1:]
		}
	}
	return imports
}

// readsConfig are the packages besides configs, cmd/ and the adapters that may import configs,
// and why. The domain receives its settings as its own types, which cmd/console/settings.go
// converts the configuration to (issue 33).
var readsConfig = map[string]string{
	"web":        "the HTTP edge: it reloads the configuration (web/reload.go) and reads the auth and audit sections",
	"handlers":   "the HTTP edge: it bounds silences by notify.silences",
	"ops/doctor": "its job is checking the configuration file itself, against the systems it names",
}

// TestConfigOnlyAtTheEdge holds the line that config parsing stays in configs and cmd: the
// domain's packages receive their settings as their own types, so none of them imports configs.
// The adapters (isAdapter) may read their own section; readsConfig lists the other exceptions.
func TestConfigOnlyAtTheEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	imports := moduleImports(t)
	var readers []string
	for pkg, deps := range imports {
		if pkg == "configs" || isAdapter(pkg) || readsConfig[pkg] != "" {
			continue
		}
		if slices.Contains(deps, module+"configs") {
			readers = append(readers, pkg)
		}
	}
	slices.Sort(readers)
	for _, pkg := range readers {
		t.Errorf("%s imports configs: give it a settings type of its own and convert the configuration to it in cmd/console/settings.go (docs/architecture.md)", pkg)
	}
	// The check reads what it thinks it reads: cmd/console is seen importing configs.
	if !slices.Contains(imports["cmd/console"], module+"configs") {
		t.Error("cmd/console is not seen importing configs: go list's output was not read as expected")
	}
}
