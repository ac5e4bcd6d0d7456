package kafka

import (
	"context"
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// TransactionAccess is kafkamodel.TransactionAccess.
type TransactionAccess = kafkamodel.TransactionAccess

// probeTransactionalID is the id TransactionAccess describes to learn the principal's right.
const probeTransactionalID = "redrive-doctor-probe-no-such-transactional-id"

// TransactionAccess reads what TransactionAccess holds. It returns an error only when the
// cluster cannot be reached at all.
func (c *Cluster) TransactionAccess(ctx context.Context) (TransactionAccess, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var ta TransactionAccess
	listed, err := c.adm.ListTransactions(ctx, nil, nil)
	switch {
	case err == nil || partial(err):
		ta.Listed = listed.TransactionalIDs()
		ta.ListErr = err
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return ta, c.fail("list transactions", err)
	default:
		ta.ListErr = err
	}
	if len(ta.Listed) > 0 {
		described, err := c.adm.DescribeTransactions(ctx, ta.Listed...)
		if err != nil && !partial(err) {
			ta.Refused = map[string]error{"*": err}
		}
		for id, d := range described {
			if d.Err != nil && Refusal(d.Err) {
				if ta.Refused == nil {
					ta.Refused = map[string]error{}
				}
				ta.Refused[id] = d.Err
			}
		}
	}
	probe, err := c.adm.DescribeTransactions(ctx, probeTransactionalID)
	switch d, ok := probe[probeTransactionalID]; {
	case err != nil:
		ta.ProbeErr = err
	case ok && d.Err != nil && !errors.Is(d.Err, kerr.TransactionalIDNotFound):
		ta.ProbeErr = d.Err
	}
	open, err := c.OpenTransactions(ctx)
	if err != nil {
		ta.OpenErr = err
	}
	for _, o := range open {
		if o.TransactionalID == "" {
			ta.Unnamed = append(ta.Unnamed, o)
		}
	}
	return ta, nil
}

// Refusal reports an authorization refusal of Kafka's (TOPIC_AUTHORIZATION_FAILED,
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, …), as kadm reports it or as a partition's error.
func Refusal(err error) bool {
	var ae *kadm.AuthError
	if errors.As(err, &ae) {
		return true
	}
	var ke *kerr.Error
	return errors.As(err, &ke) && strings.HasSuffix(ke.Message, "AUTHORIZATION_FAILED")
}
