package devstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// A tool the tests use beside the services: the Debian package that provides it and how to tell
// that it is there.
type tool struct {
	pkg     string
	present func() bool
}

// pythonModule is there when Debian's python3 imports it.
func pythonModule(module string) func() bool {
	return func() bool {
		return exec.Command("/usr/bin/python3", "-c", "import "+module).Run() == nil
	}
}

func fileAt(path string) func() bool { return func() bool { return fileExists(path) } }

func onPath(name string) func() bool {
	return func() bool { _, err := exec.LookPath(name); return err == nil }
}

// testTools are what `make test` needs beside the services: the independent Python encoders the
// Schema Registry decoders are cross-checked against (ops/kafka/schema, ops/replay), Debian's
// chromium and its driver for the browser tests, kcat for the Kafka cross-checks.
var testTools = []tool{
	{"python3-confluent-kafka", pythonModule("confluent_kafka")},
	{"python3-requests", pythonModule("requests")},
	{"python3-jsonschema", pythonModule("jsonschema")},
	{"python3-protobuf", pythonModule("google.protobuf")},
	{"python3-avro", pythonModule("avro")},
	{"chromium", fileAt("/usr/bin/chromium")},
	{"chromium-driver", fileAt("/usr/bin/chromedriver")},
	{"kcat", onPath("kcat")},
}

// missingPackages are the packages of tools that are not there, in order, each once.
func missingPackages(tools []tool) []string {
	var out []string
	for _, t := range tools {
		if !t.present() && !slices.Contains(out, t.pkg) {
			out = append(out, t.pkg)
		}
	}
	return out
}

// TestTools installs, with apt-get, the packages of the tools `make test` needs beside the
// services (Python cross-check encoders, chromium and chromium-driver, kcat) that are missing.
// It returns the packages it installed. Not root, it installs nothing and its error is the exact
// command to run.
func TestTools(ctx context.Context) ([]string, error) {
	missing := missingPackages(testTools)
	if len(missing) == 0 {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("devstack: the tests need %s, which are not installed, and we are not root to install them: run  sudo apt-get install -y %s",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	if err := aptInstall(ctx, missing...); err != nil {
		return nil, err
	}
	if still := missingPackages(testTools); len(still) > 0 {
		return missing, fmt.Errorf("devstack: installed %s, yet %s still missing", strings.Join(missing, " "), strings.Join(still, " "))
	}
	return missing, nil
}
