// Package archive renders the archive of messages discard jobs (and custody) took from RabbitMQ dead-letter
// queues, with each one's restores.
package archive

import (
	"time"

	"github.com/redrive/redrive/views/layout"
)

// Page is the archive, newest first, narrowed to a broker and queue when given.
type Page struct {
	Meta          layout.Meta
	Broker, Queue string
	Flash         string
	Error         string
	Rows          []Row
	NextURL       string
}

// Row is one archived message.
type Row struct {
	ID           int64
	MessageID    string
	Broker       string
	Vhost        string
	Queue        string
	ArchivedAt   time.Time
	By, Reason   string
	JobID        string
	Body         string
	BodyEncoding string
	Redacted     bool
	// Original is where it was dead-lettered from (x-death): where a replay sends it; "" when
	// its headers do not say.
	Original   string
	RestoredAt *time.Time
	RestoredBy string
	RestoredTo string
}
