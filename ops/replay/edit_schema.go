package replay

import (
	"context"
	"errors"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// valueEncoder writes an edited value (JSON, as the records show it) back into the wire format
// of the value it replaces, with the schema id that value carries; *kafka.Cluster does. Nil, nil
// when the original is not for a schema.
type valueEncoder interface {
	EncodeValue(ctx context.Context, topic string, original, text []byte) (*kafkamodel.Encoded, error)
}

// encodeEdit is what an edit and retry of a value of topic publishes: a value in a schema's wire
// format (Confluent framing: Avro, Protobuf, JSON Schema) is the edited JSON encoded back with the
// record's own schema id — never the JSON text, which the consumer's deserializer would reject;
// any other value is the text as it is. JSON that does not fit the schema is an edit.value error
// naming the field; a registry that does not answer an ops.ErrUnavailable (nothing is published).
func encodeEdit(ctx context.Context, k KafkaCluster, topic string, original []byte, text string) ([]byte, *kafkamodel.Encoded, error) {
	ve, ok := k.(valueEncoder)
	if !ok {
		return []byte(text), nil, nil
	}
	enc, err := ve.EncodeValue(ctx, topic, original, []byte(text))
	var me *kafkamodel.MismatchError
	switch {
	case errors.As(err, &me):
		return nil, nil, invalid("edit.value", me.Error()+" (edit the JSON as shown; it is encoded back with the record's schema)")
	case err != nil:
		return nil, nil, err
	case enc == nil:
		return []byte(text), nil, nil
	}
	return enc.Bytes, enc, nil
}
