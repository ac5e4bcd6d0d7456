// Package rabbitmodel is what Redrive knows of RabbitMQ without a client: queues and their
// effective settings, messages as browsed, their headers and properties, dead-letter metadata,
// topology edges and retry loops, versions, permissions, and the advice that follows from them
// (BrowseCost, the delivery-limit fixes). It imports no driver and no package that imports one,
// so that the domain can use these types without the adapter (ops/rabbit), which fills them.
package rabbitmodel
