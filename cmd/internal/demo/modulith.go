package demo

import (
	"context"
	"fmt"
	"time"
)

// ModulithDDL is Spring Modulith's v2 event publication registry as its MySQL/MariaDB schema
// creates it (spring-modulith-events-jdbc, schemas/v2/schema-mysql.sql): upper-case names.
const ModulithDDL = `CREATE TABLE IF NOT EXISTS EVENT_PUBLICATION
(
  ID                     VARCHAR(36) NOT NULL,
  LISTENER_ID            VARCHAR(512) NOT NULL,
  EVENT_TYPE             VARCHAR(512) NOT NULL,
  SERIALIZED_EVENT       VARCHAR(4000) NOT NULL,
  PUBLICATION_DATE       TIMESTAMP(6) NOT NULL,
  COMPLETION_DATE        TIMESTAMP(6) DEFAULT NULL NULL,
  STATUS                 VARCHAR(20),
  COMPLETION_ATTEMPTS    INT,
  LAST_RESUBMISSION_DATE TIMESTAMP(6) DEFAULT NULL NULL,
  PRIMARY KEY (ID),
  INDEX EVENT_PUBLICATION_BY_COMPLETION_DATE_IDX (COMPLETION_DATE)
)`

// modulithListeners are the demo's Spring services' @ApplicationModuleListener methods, as
// Spring Modulith names a listener (its PublicationTargetIdentifier) and the event each takes.
var modulithListeners = []struct{ listener, event string }{
	{"com.acme.refunds.notify.RefundNotifier.on(com.acme.refunds.RefundIssued)", "com.acme.refunds.RefundIssued"},
	{"com.acme.refunds.ledger.LedgerBridge.on(com.acme.refunds.RefundIssued)", "com.acme.refunds.RefundIssued"},
	{"com.acme.refunds.risk.ChargebackWatch.on(com.acme.refunds.RefundApproved)", "com.acme.refunds.RefundApproved"},
	{"com.acme.billing.invoicing.CreditNotes.on(com.acme.refunds.RefundApproved)", "com.acme.refunds.RefundApproved"},
}

// SeedModulith creates the Spring Modulith event publication registry in the MariaDB database of
// dsn (the refunds service is a Spring Modulith application) and fills it unless it holds rows:
// two days of completed publications of four listeners, a few incomplete ones (published,
// processing, resubmitted) and FAILED ones of two listeners after several attempts — each
// serialized event carrying a card number the redaction rules mask.
func SeedModulith(ctx context.Context, dsn string) error {
	db, err := openMySQL(dsn)
	if err != nil {
		return fmt.Errorf("demo: modulith registry: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, ModulithDDL); err != nil {
		return fmt.Errorf("demo: modulith registry: %w", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM EVENT_PUBLICATION`).Scan(&n); err != nil || n > 0 {
		return err
	}
	now := time.Now().UTC()
	seq := 0
	insert := func(l int, status string, age time.Duration, attempts int, completed, resubmitted bool) error {
		seq++
		refund := fmt.Sprintf("rf-%05d", 20000+seq)
		event := fmt.Sprintf(`{"refundId":%q,"orderId":"o-%d","amount":{"value":%d.%02d,"currency":"EUR"},"card":{"number":"4111111111111111","holder":"M. Keller"}}`,
			refund, 1000+seq, 10+seq%90, seq%100)
		published := now.Add(-age)
		var completion, resubmission any
		if completed {
			completion = published.Add(time.Duration(200+seq%800) * time.Millisecond)
		}
		if resubmitted {
			resubmission = published.Add(age / 2)
		}
		_, err := db.ExecContext(ctx, `INSERT INTO EVENT_PUBLICATION (ID, LISTENER_ID, EVENT_TYPE, SERIALIZED_EVENT,
			PUBLICATION_DATE, COMPLETION_DATE, STATUS, COMPLETION_ATTEMPTS, LAST_RESUBMISSION_DATE) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			fmt.Sprintf("6d0c1e2a-4b7f-4c1e-9a3d-%012d", seq), modulithListeners[l].listener, modulithListeners[l].event, event,
			published, completion, status, attempts, resubmission)
		return err
	}
	for i := range 48 { // completed, over two days
		if err := insert(i%len(modulithListeners), "COMPLETED", time.Duration(i+1)*time.Hour, 1, true, false); err != nil {
			return fmt.Errorf("demo: modulith registry: %w", err)
		}
	}
	for _, p := range []struct {
		l        int
		status   string
		age      time.Duration
		attempts int
	}{
		{1, "FAILED", 26 * time.Hour, 3}, {1, "FAILED", 5 * time.Hour, 2}, {1, "FAILED", 3 * time.Hour, 2},
		{3, "FAILED", 50 * time.Minute, 1}, {3, "FAILED", 40 * time.Minute, 1},
		{0, "PUBLISHED", 20 * time.Second, 1}, {2, "PUBLISHED", 45 * time.Second, 1},
		{2, "PROCESSING", 3 * time.Second, 1}, {0, "RESUBMITTED", 2 * time.Hour, 2},
	} {
		if err := insert(p.l, p.status, p.age, p.attempts, false, p.attempts > 1); err != nil {
			return fmt.Errorf("demo: modulith registry: %w", err)
		}
	}
	return nil
}
