// Package kafkamodel is what Redrive knows of Kafka without a client: records and their headers,
// dead-letter metadata and the header names it is read from, consumer groups and their lag,
// dead-letter topics and error groups, open transactions, a group's offsets and the copies an
// offset move makes, and keys and values read through a schema. It imports no driver and no
// package that imports one, so that the domain can speak of Kafka and compile without franz-go;
// ops/kafka (the franz-go adapter) reads and writes these types.
package kafkamodel
