package schema

import "github.com/redrive/redrive/ops/kafka/kafkamodel"

// The decoder's own names for the model's types (ops/kafka/kafkamodel), so that it and its callers
// read as before; a record carries them without importing the registry's client.

type (
	Decoded       = kafkamodel.Decoded
	Encoded       = kafkamodel.Encoded
	MismatchError = kafkamodel.MismatchError
)

const (
	FormatAvro       = kafkamodel.FormatAvro
	FormatProtobuf   = kafkamodel.FormatProtobuf
	FormatJSONSchema = kafkamodel.FormatJSONSchema
)
