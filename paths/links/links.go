// Package links turns the pages the domain names (ops/page) into the console's paths: the one
// edge where a problem, an alert or a notification gets its link.
package links

import (
	"net/url"

	"github.com/redrive/redrive/ops/page"
	"github.com/redrive/redrive/paths"
)

// To is the console path of p, whose subject is named by labels; "" for a page it does not know
// or an empty Kind.
func To(p page.Page, labels map[string]string) string {
	l := func(name string) string { return labels[name] }
	var s string
	switch p.Kind {
	case page.KafkaCluster:
		s = paths.KafkaCluster(l("cluster"))
	case page.KafkaGroup:
		s = paths.KafkaGroup(l("cluster"), l("group"))
	case page.ErrorGroups:
		s = paths.KafkaTopicErrors(l("cluster"), l("topic"))
	case page.RabbitBroker:
		s = paths.RabbitBroker(l("broker"))
	case page.Queue:
		s = paths.Queue(l("broker"), l("vhost"), l("queue"))
	case page.QueueMessages:
		s = paths.QueueMessages(l("broker"), l("vhost"), l("queue"))
	case page.Outbox:
		s = paths.Outbox(l("outbox"))
	case page.Replays:
		s = paths.Replays
	case page.Replay:
		s = paths.Replay(l("job"))
	case page.Readiness:
		s = paths.Readyz
	case page.Notifications:
		s = paths.Notifications
	default:
		return ""
	}
	if len(p.Filter) > 0 {
		q := url.Values{}
		for k, v := range p.Filter {
			q.Set(k, v)
		}
		s = paths.WithQuery(s, q)
	}
	if p.Section != "" {
		s += "#" + url.PathEscape(p.Section)
	}
	return s
}
