package rabbitmodel

// DefaultVhost is RabbitMQ's default virtual host.
const DefaultVhost = "/"

// VhostName is name (a queue or an exchange) within vhost as Redrive prints it for people and
// labels: the name alone in the default vhost "/" ("orders.dlq"), else vhost/name
// ("billing/invoices.dlq"). The default vhost is left out, as a plan's destination leaves it out,
// rather than printed as "//orders.dlq". It is a display form, not a key: a queue named
// "billing/invoices.dlq" in the default vhost prints as invoices.dlq of vhost billing does.
func VhostName(vhost, name string) string {
	if vhost == DefaultVhost || vhost == "" {
		return name
	}
	return vhost + "/" + name
}

// String is the queue as VhostName prints it.
func (r QueueRef) String() string { return VhostName(r.Vhost, r.Name) }
