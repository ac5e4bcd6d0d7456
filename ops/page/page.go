// Package page names the console page that shows something, in the domain's own words: which
// page, the subject's labels (cluster, group, topic, broker, vhost, queue, outbox, job) and a
// filter or part of it to open at. The domain says where to look; the edge (paths/links) makes
// it a link, so that no domain package builds a URL. It imports nothing.
package page

// Kind is a page of the console that a problem or a notification can point at. Each kind names
// the labels its subject takes.
type Kind string

// The pages.
const (
	KafkaCluster  Kind = "kafka_cluster"           // cluster
	KafkaGroup    Kind = "kafka_group"             // cluster, group
	ErrorGroups   Kind = "kafka_error_groups"      // cluster, topic: the topic's dead letters by error
	RabbitBroker  Kind = "rabbitmq_broker"         // broker
	Queue         Kind = "rabbitmq_queue"          // broker, vhost, queue
	QueueMessages Kind = "rabbitmq_queue_messages" // broker, vhost, queue
	Outbox        Kind = "outbox"                  // outbox
	Replays       Kind = "replays"
	Replay        Kind = "replay" // job
	Readiness     Kind = "readiness"
	Notifications Kind = "notifications"
)

// Page is one page to open: Kind, with the filters its list takes ({"status": "DEAD"}) and the
// part of it to scroll to ("transactions"). Its subject is the labels it travels with.
type Page struct {
	Kind    Kind
	Filter  map[string]string
	Section string
}

// Of is the page of kind k with no filter.
func Of(k Kind) Page { return Page{Kind: k} }

// Filtered is the page of kind k with one filter set.
func Filtered(k Kind, name, value string) Page {
	return Page{Kind: k, Filter: map[string]string{name: value}}
}
