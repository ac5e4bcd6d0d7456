package ops

// Consumer is a service that consumes messages (consumers[] in the configuration): what it reads,
// so that replay and trace can tell whose inbox guards a message and who dead-lettered it. Whether
// it has an inbox is told by the inboxes the engines are given, one per consumer that has one.
type Consumer struct {
	Name     string          // unique; the inbox's consumer column value
	Kafka    *ConsumerKafka  // nil when it reads no Kafka topic
	RabbitMQ *ConsumerRabbit // nil when it reads no RabbitMQ queue
}

// ConsumerKafka is the Kafka side of a Consumer: its group and the topics it reads on a cluster.
type ConsumerKafka struct {
	Cluster string
	Group   string
	Topics  []string
}

// ConsumerRabbit is the RabbitMQ side of a Consumer: the queue it reads.
type ConsumerRabbit struct {
	Broker string
	Vhost  string
	Queue  string
}
