// Package source names the kinds of source Redrive reads dead messages from and puts them back
// into: one vocabulary for plans, jobs, destinations, content searches and redaction, so that a
// kind is a type the compiler checks rather than a string each package spells its own way.
// It imports nothing, so that every layer may use it.
package source

// Kind is a kind of source, as the API and the store write it.
type Kind string

// The kinds.
const (
	Kafka    Kind = "kafka"
	RabbitMQ Kind = "rabbitmq"
	Outbox   Kind = "outbox"
	// Archive is the messages discard jobs archived from RabbitMQ dead-letter queues.
	Archive Kind = "archive"
)

// Kinds lists every kind, in the order the API documents them.
var Kinds = []Kind{Kafka, RabbitMQ, Outbox, Archive}
