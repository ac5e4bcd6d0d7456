// Package helm_test renders the Helm chart in deploy/helm/redrive with helm itself (the version
// the Makefile's lint target runs) and checks the manifests the console depends on.
package helm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"

	"github.com/redrive/redrive/configs"
)

// Helm is the helm module version `make lint` runs; keep the two in step.
const Helm = "helm.sh/helm/v3/cmd/helm@v3.22.0"

func render(t *testing.T, args ...string) map[string]map[string]any {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", Helm, "template", "rd", "redrive"}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	docs := map[string]map[string]any{}
	dec := yaml.NewDecoder(&out)
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if d != nil {
			docs[d["kind"].(string)] = d
		}
	}
	return docs
}

// get walks a decoded document: keys for maps, "name=x" to pick the list element named x, "0".
func get(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		switch c := v.(type) {
		case map[string]any:
			v = c[k]
		case []any:
			if name, ok := strings.CutPrefix(k, "name="); ok {
				v = nil
				for _, e := range c {
					if m, _ := e.(map[string]any); m["name"] == name {
						v = m
					}
				}
			} else if k == "0" && len(c) > 0 {
				v = c[0]
			} else {
				v = nil
			}
		default:
			t.Fatalf("%v: no %q in %T", keys, k, v)
		}
	}
	return v
}

// dockerConfigPath is the --config of the image's CMD: where the image reads its config.
func dockerConfigPath(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CMD (\[.*\])$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no CMD in the Dockerfile")
	}
	var cmd []string
	if err := json.Unmarshal(m[1], &cmd); err != nil {
		t.Fatal(err)
	}
	for i, a := range cmd {
		if a == "--config" && i+1 < len(cmd) {
			return cmd[i+1]
		}
	}
	t.Fatalf("the Dockerfile's CMD %v names no --config", cmd)
	return ""
}

func TestChartRenders(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	docs := render(t, "--set", "secretEnv.REDRIVE_ADMIN_PASSWORD_HASH="+string(hash))
	dep := docs["Deployment"]
	if dep == nil {
		t.Fatalf("no Deployment in %v", docs)
	}
	if r := get(t, dep, "spec", "replicas"); r != 2 {
		t.Errorf("replicas %v, want 2", r)
	}
	ctr := get(t, dep, "spec", "template", "spec", "containers", "name=console")
	for probe, want := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if p := get(t, ctr, probe, "httpGet", "path"); p != want {
			t.Errorf("%s path %v, want %s", probe, p, want)
		}
		if p := get(t, ctr, probe, "httpGet", "port"); p != "http" {
			t.Errorf("%s port %v", probe, p)
		}
	}
	if p := get(t, ctr, "ports", "name=http", "containerPort"); p != 8080 {
		t.Errorf("container port %v", p)
	}
	if r := get(t, ctr, "env", "name=GOMEMLIMIT", "valueFrom", "resourceFieldRef", "resource"); r != "limits.memory" {
		t.Errorf("GOMEMLIMIT from %v, want limits.memory", r)
	}
	sc := get(t, ctr, "securityContext")
	if get(t, sc, "readOnlyRootFilesystem") != true || get(t, sc, "allowPrivilegeEscalation") != false ||
		get(t, sc, "capabilities", "drop", "0") != "ALL" {
		t.Errorf("container securityContext %v", sc)
	}
	psc := get(t, dep, "spec", "template", "spec", "securityContext")
	if get(t, psc, "runAsNonRoot") != true || get(t, psc, "runAsUser") == 0 {
		t.Errorf("pod securityContext %v", psc)
	}
	if get(t, ctr, "resources", "limits", "memory") == nil || get(t, ctr, "resources", "requests", "cpu") == nil {
		t.Errorf("resources %v", get(t, ctr, "resources"))
	}

	// The config is mounted where the image reads it, and the container is told that path.
	want := dockerConfigPath(t)
	if args := get(t, ctr, "args"); !strings.Contains(strings.Join(toStrings(args), " "), "--config "+want) {
		t.Errorf("args %v do not name %s", args, want)
	}
	mount := get(t, ctr, "volumeMounts", "name=config")
	if get(t, mount, "mountPath") != path.Dir(want) || get(t, mount, "readOnly") != true {
		t.Errorf("config mount %v, want %s read-only", mount, path.Dir(want))
	}
	cmName := get(t, dep, "spec", "template", "spec", "volumes", "name=config", "configMap", "name")
	cm := docs["ConfigMap"]
	if get(t, cm, "metadata", "name") != cmName {
		t.Fatalf("the config volume names ConfigMap %v, the chart renders %v", cmName, get(t, cm, "metadata", "name"))
	}
	text, _ := get(t, cm, "data", path.Base(want)).(string)
	if text == "" {
		t.Fatalf("ConfigMap has no %s: %v", path.Base(want), get(t, cm, "data"))
	}
	// The secrets reach the pod as environment variables from the Secret, which is what the
	// config's ${NAME} references read: together they make a config the console accepts.
	secName := get(t, ctr, "envFrom", "0", "secretRef", "name")
	sec := docs["Secret"]
	if get(t, sec, "metadata", "name") != secName {
		t.Fatalf("envFrom names Secret %v, the chart renders %v", secName, get(t, sec, "metadata", "name"))
	}
	env, _ := get(t, sec, "stringData").(map[string]any)
	cfg, err := configs.Parse([]byte(text), func(k string) string { s, _ := env[k].(string); return s })
	if err != nil {
		t.Fatalf("the rendered config is refused: %v\n%s", err, text)
	}
	if cfg.Listen != "0.0.0.0:8080" || !strings.HasPrefix(string(cfg.Store.DSN), "postgres://") {
		t.Errorf("rendered config: listen %s", cfg.Listen)
	}
	for _, kind := range []string{"Service", "ServiceAccount"} {
		if docs[kind] == nil {
			t.Errorf("no %s", kind)
		}
	}
	if docs["PodDisruptionBudget"] != nil || docs["ServiceMonitor"] != nil {
		t.Error("PodDisruptionBudget and ServiceMonitor are optional, off by default")
	}

	t.Run("Optional", func(t *testing.T) {
		docs := render(t, "--set", "podDisruptionBudget.enabled=true", "--set", "serviceMonitor.enabled=true",
			"--set", "existingSecret=mine", "--set", "replicaCount=3")
		if get(t, docs["PodDisruptionBudget"], "spec", "minAvailable") != 1 {
			t.Errorf("pdb %v", docs["PodDisruptionBudget"])
		}
		if get(t, docs["ServiceMonitor"], "spec", "endpoints", "0", "path") != "/metrics" {
			t.Errorf("servicemonitor %v", docs["ServiceMonitor"])
		}
		if docs["Secret"] != nil {
			t.Error("a Secret is rendered although existingSecret is set")
		}
		ctr := get(t, docs["Deployment"], "spec", "template", "spec", "containers", "name=console")
		if get(t, ctr, "envFrom", "0", "secretRef", "name") != "mine" {
			t.Errorf("envFrom %v", get(t, ctr, "envFrom"))
		}
	})
}

func toStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}
