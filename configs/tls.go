package configs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/redrive/redrive/ops"
)

// ClientConfig builds a client TLS configuration from the tls block (CA, client certificate,
// insecure_skip_verify): reading the files the configuration names is the configuration's loading,
// so the adapters (Kafka, the schema registry, RabbitMQ) call it here. A file that cannot be read
// is an ops.ErrInvalid naming the key.
func (t *TLS) ClientConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // an explicit, documented operator choice
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, ops.Invalid("tls.ca_file", err.Error())
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, ops.Invalid("tls.ca_file", fmt.Sprintf("%s holds no PEM certificate", t.CAFile))
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, ops.Invalid("tls.cert_file", err.Error())
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
