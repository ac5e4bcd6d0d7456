package schema

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/sr"
)

// RegistryCheck is what the doctor learns from the Schema Registry.
type RegistryCheck struct {
	Configured bool
	Subjects   int
	// Status is the HTTP status of a refused request (401, 403, …); 0 when the registry answered
	// or could not be reached at all.
	Status int
}

// CheckRegistry lists the registry's subjects with the configured credentials (a read; nothing is
// registered). The error is the registry's answer or why it could not be reached.
func (d *Decoder) CheckRegistry(ctx context.Context) (RegistryCheck, error) {
	if d == nil || d.reg == nil {
		return RegistryCheck{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	subjects, err := d.reg.Subjects(ctx)
	rc := RegistryCheck{Configured: true, Subjects: len(subjects)}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		rc.Status = re.StatusCode
	}
	return rc, err
}
