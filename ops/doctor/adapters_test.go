package doctor_test

import (
	"context"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/pgpool"
	"github.com/redrive/redrive/ops/rabbit"
	"github.com/redrive/redrive/ops/store"
)

// withSystems adds to ad what cmd/console wires for every run (its doctorStore, openKafka and
// openRabbit, which a test cannot import): the store inspected over its DSN, and the Kafka and
// RabbitMQ adapters opened from the config.
func withSystems(ad doctor.Adapters) doctor.Adapters {
	ad.Store = testStore{}
	ad.OpenKafka = func(kc configs.KafkaCluster, ids configs.MessageIDRules) (doctor.KafkaCluster, error) {
		c, err := kafka.New(kc, ids)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	ad.OpenRabbit = func(rc configs.RabbitMQBroker, ids configs.MessageIDRules) (doctor.RabbitBroker, error) {
		b, err := rabbit.New(rc, ids)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	return ad
}

// testStore is ops/store as the doctor reads it, over a connection to the DSN.
type testStore struct{}

func (testStore) Inspect(ctx context.Context, dsn string) (doctor.StoreFacts, error) {
	f, err := store.Inspect(ctx, dsn)
	return doctor.StoreFacts(f), err
}
func (testStore) Schema() string        { return store.Schema }
func (testStore) Ident(s string) string { return pgpool.Ident(s) }
