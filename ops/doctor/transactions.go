package doctor

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
)

// checkTransactions reports DESCRIBE on transactional ids ("transactional ids"): the console finds
// open transactions with DescribeProducers and names them with ListTransactions and
// DescribeTransactions, and Kafka leaves out of ListTransactions, without a word, every id the
// principal may not describe, so that a transaction of a hidden id reads as one no coordinator
// knows (hanging). The fix is the ACL granting DESCRIBE on every transactional id.
func checkTransactions(ctx context.Context, r *recorder, kc configs.KafkaCluster, k KafkaCluster) {
	const name = "transactional ids"
	fix := aclFix(kc, "Describe", "--transactional-id '*'")
	ta, err := k.TransactionAccess(ctx)
	if err != nil {
		r.warn(name, "", "not checked: %s", short(err))
		return
	}
	who := principal(kc)
	switch {
	case ta.ListErr != nil && k.Refusal(ta.ListErr):
		r.fail(name, fix, "%s may not list transactions (ListTransactions: %s): open transactions would be reported without their transactional id, as hanging",
			who, short(ta.ListErr))
		return
	case ta.ListErr != nil:
		r.warn(name, "", "not checked: ListTransactions: %s", short(ta.ListErr))
		return
	case len(ta.Refused) > 0:
		var ids []string
		for id := range ta.Refused {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		r.fail(name, fix, "DescribeTransactions refused %s for %s", who, strings.Join(ids, ", "))
		return
	}
	unnamed := ""
	if len(ta.Unnamed) > 0 {
		var where []string
		for _, o := range ta.Unnamed {
			where = append(where, fmt.Sprintf("%s[%d] producer %d", o.Topic, o.Partition, o.ProducerID))
		}
		unnamed = fmt.Sprintf("%s open with no transactional id %s could list (%s): hanging, or hidden from it",
			ops.Plural(int64(len(ta.Unnamed)), "transaction"), who, strings.Join(where, ", "))
	}
	listed := ops.Plural(int64(len(ta.Listed)), "transactional id") + " listed and described"
	switch {
	case ta.ProbeErr != nil && k.Refusal(ta.ProbeErr):
		detail := fmt.Sprintf("%s may not describe every transactional id (DescribeTransactions of one nobody uses: %s): "+
			"an open transaction of an id it may not describe is reported without it, as hanging", who, kafkaCode(k, ta.ProbeErr))
		if unnamed != "" {
			detail += "; " + unnamed
		}
		r.fail(name, fix, "%s", detail)
	case ta.ProbeErr != nil:
		r.warn(name, "", "not checked: DescribeTransactions: %s", short(ta.ProbeErr))
	case unnamed != "":
		// Every id is visible to it: these are hanging, not hidden (the overview tells them).
		r.ok(name, "%s may describe every transactional id; %s; %s", who, listed,
			strings.Replace(unnamed, "hanging, or hidden from it", "hanging (no coordinator knows them)", 1))
	default:
		r.ok(name, "%s may describe every transactional id (DescribeTransactions of one nobody uses: not found); %s", who, listed)
	}
}

// kafkaCode is Kafka's error code in err (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), or its text.
func kafkaCode(k KafkaCluster, err error) string {
	return cmp.Or(k.Code(err), short(err))
}
