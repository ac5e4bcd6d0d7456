package kafkamodel

// TopicOffsets are a topic's partitions with their log bounds and a group's committed offsets.
type TopicOffsets struct {
	Topic      string
	Partitions []PartitionOffsets // by partition
}

// PartitionOffsets is one partition of TopicOffsets.
type PartitionOffsets struct {
	Partition int32
	Start     int64 // log start offset
	End       int64 // log end offset (high watermark)
	Committed int64 // the group's committed offset; -1 when none
}

// CopyRequest copies the records a group skips to a dead-letter topic.
type CopyRequest struct {
	PlanID string // required: written to kafka.HeaderOffsetPlan on every copy
	Group  string // the group that skips them (kafka_dlt-original-consumer-group)
	Topic  string // the topic they are skipped on
	// Ranges are per partition the offsets [from, to) skipped.
	Ranges map[int32][2]int64
	Dest   string // the dead-letter topic
	// DestFrom are the dead-letter topic's end offsets when the plan was made: copies a previous
	// apply of the same plan made are found from there on.
	DestFrom map[int32]int64
	// Exception is the kafka_dlt-exception-message: who skipped the records and why.
	Exception string
}

// CopyResult counts a CopyRequest's records.
type CopyResult struct {
	Copied  int // produced now, each acknowledged by all in-sync replicas
	Already int // found in the dead-letter topic from an earlier apply of the plan
}
