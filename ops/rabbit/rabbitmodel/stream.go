package rabbitmodel

// StreamNotASource is why a stream is no source of a replay or a discard: a consumer reads it by
// offset and an ack removes nothing, so a job could not take a message out of it — every item
// would end failed, or be "moved" while it stays. The replay engine refuses such a plan with it,
// and a stream's messages page offers no plan.
const StreamNotASource = "a stream keeps its messages (read by offset; an ack removes nothing), so a replay or a " +
	"discard cannot take them out of it; replay from a classic or quorum dead-letter queue (shovel the stream's " +
	"messages into one)"
