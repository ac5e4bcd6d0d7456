package ops

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/redrive/redrive/configs"
)

// MessageIDFromJSON finds a message's idempotency key in a JSON object body: the first of paths
// (dot-separated; numeric segments index arrays) that leads to a non-empty string or a number.
// "" when the body is not a JSON object or no path resolves. Kafka and RabbitMQ share the rule.
func MessageIDFromJSON(body []byte, paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return ""
	}
	for _, p := range paths {
		if v, ok := jsonPath(doc, p); ok {
			return v
		}
	}
	return ""
}

func jsonPath(doc any, p string) (string, bool) {
	cur := doc
	for _, seg := range strings.Split(p, ".") {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[seg]
			if !ok {
				return "", false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) {
				return "", false
			}
			cur = v[i]
		default:
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, v != ""
	case json.Number:
		return v.String(), true
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
