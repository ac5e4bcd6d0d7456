package kafka

import (
	"context"

	"github.com/redrive/redrive/ops/kafka/schema"
)

// EncodeValue writes text (JSON, as the records of topic show a value) into the wire format of
// original, a value of a record of topic, with the schema its bytes name (schema.Decoder.Encode):
// nil, nil when original is not for a schema.
func (c *Cluster) EncodeValue(ctx context.Context, topic string, original, text []byte) (*schema.Encoded, error) {
	return c.schemas.Encode(ctx, topic, false, original, text)
}
