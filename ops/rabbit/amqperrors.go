package rabbit

import (
	"errors"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The broker's answers other packages act on, named so that they need not import the driver.

// AccessRefused returns the broker's reason when err is its ACCESS_REFUSED (403) of a channel or
// connection operation.
func AccessRefused(err error) (reason string, ok bool) {
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.AccessRefused {
		return ae.Reason, true
	}
	return "", false
}

// BrokerClosed says whether err is a close the broker sent (a channel or connection exception),
// rather than a network or client failure.
func BrokerClosed(err error) bool {
	var ae *amqp.Error
	return errors.As(err, &ae)
}

// The same answers as methods, so that a port (console doctor's) has the broker classify its own
// errors and its caller needs no driver to tell them apart.

// AccessRefused is AccessRefused.
func (*Broker) AccessRefused(err error) (reason string, ok bool) { return AccessRefused(err) }

// BrokerClosed is BrokerClosed.
func (*Broker) BrokerClosed(err error) bool { return BrokerClosed(err) }

// APIStatus is APIStatus.
func (*Broker) APIStatus(err error) int { return APIStatus(err) }
