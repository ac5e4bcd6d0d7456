// Package sampler collects what the dashboards show — Kafka consumer lag, RabbitMQ queue depths,
// rates and dead-letter topology — on an interval, in the background, each source on exactly one
// console replica at a time (a lease per source with a fencing token, see leadership.go), and stores both the latest snapshot and the
// history in the console's store. Pages read the stored snapshot, so any number of viewers and replicas cost the brokers
// one set of admin calls per interval.
package sampler
