package handlers

// What a page shows inline of a message: a Kafka record (toRecordView) or a RabbitMQ message
// (toMessageView). Message content is untrusted and unbounded, and not only its value or body: a
// key, a header (a dead letter's exception message or stack trace), a property can be hundreds of
// kilobytes, and a row showed its exception message twice (the cell and its tooltip). Each part is
// cut with payload.Cut, and the page says what was cut and its full size and links the API that
// gives the message whole (Kafka's records API, RabbitMQ's messages API).
const (
	maxRenderedValue = 64 << 10 // a value or body, and a dead letter's stack trace
	maxRenderedField = 4 << 10  // a key, each header's value, a property, an exception's type, cause and message
	maxRowText       = 200      // what a row's cells and their tooltips show of a key, value, id or exception
)
