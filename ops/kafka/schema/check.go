package schema

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// RegistryCheck is kafkamodel.RegistryCheck: the doctor reads it without this package.
type RegistryCheck = kafkamodel.RegistryCheck

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
