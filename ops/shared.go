package ops

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/redrive/redrive/configs"
)

// MessageIDFromJSON finds a message's idempotency key in a JSON object body: the first of paths
// (message_id.json_paths: $.meta.id, $.items[0].id, or the old bare meta.id, whose numeric
// segments index arrays; see configs.MessageIDPath) that leads to a non-empty string or a number.
// "" when the body is not a JSON object or no path resolves. Kafka and RabbitMQ share the rule.
func MessageIDFromJSON(body []byte, paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return ""
	}
	// Each level is split into raw members only along the path, not decoded into a tree: an id
	// is usually one field of a large body (a decoded Avro or Protobuf page pays this per record).
	var root map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &root); err != nil {
		return ""
	}
	for _, p := range paths {
		path, _, err := configs.MessageIDPath(p) // the configuration was validated at start
		if err != nil || len(path) == 0 || (path[0].Kind != configs.StepKey && path[0].Kind != configs.StepKeyOrIndex) {
			continue
		}
		if cur, ok := root[path[0].Key]; ok {
			if v, ok := jsonPath(cur, path[1:]); ok {
				return v
			}
		}
	}
	return ""
}

// jsonPath follows path from cur to a non-empty string or a number.
func jsonPath(cur json.RawMessage, path configs.JSONPath) (string, bool) {
	var ok bool
	for _, step := range path {
		switch t := bytes.TrimSpace(cur); {
		case len(t) > 0 && t[0] == '{' && (step.Kind == configs.StepKey || step.Kind == configs.StepKeyOrIndex):
			var m map[string]json.RawMessage
			if json.Unmarshal(t, &m) != nil {
				return "", false
			}
			if cur, ok = m[step.Key]; !ok {
				return "", false
			}
		case len(t) > 0 && t[0] == '[' && (step.Kind == configs.StepIndex || step.Kind == configs.StepKeyOrIndex):
			i := step.Index
			if step.Kind == configs.StepKeyOrIndex {
				var err error
				if i, err = strconv.Atoi(step.Key); err != nil {
					return "", false
				}
			}
			var a []json.RawMessage
			if json.Unmarshal(t, &a) != nil || i < 0 || i >= len(a) {
				return "", false
			}
			cur = a[i]
		default:
			return "", false
		}
	}
	t := bytes.TrimSpace(cur)
	switch {
	case len(t) > 0 && t[0] == '"':
		var s string
		if json.Unmarshal(t, &s) != nil {
			return "", false
		}
		return s, s != ""
	case len(t) > 0 && (t[0] == '-' || (t[0] >= '0' && t[0] <= '9')):
		return string(t), true
	}
	return "", false
}

// TLSConfig builds a client TLS configuration from the config's tls block (CA, client
// certificate, insecure_skip_verify). A file that cannot be read is an ErrInvalid naming the key.
func TLSConfig(t *configs.TLS) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // an explicit, documented operator choice
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, Invalid("tls.ca_file", err.Error())
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, Invalid("tls.ca_file", fmt.Sprintf("%s holds no PEM certificate", t.CAFile))
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, Invalid("tls.cert_file", err.Error())
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
