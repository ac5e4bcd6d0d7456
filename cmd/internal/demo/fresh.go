package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"
)

// Data names what one run of the demo writes, so that the next start can drop it all: every
// start of `make demo` is a fresh demo. Kafka (kfake, in memory) and the Schema Registry start
// empty anyway; the services' databases and the RabbitMQ vhost outlive the process, and Redrive's
// own store refers to what is in them (the replay ledger, the archive, released leases), so they
// go together: keeping one and not the other made a second start show a message twice in the
// archive and no stuck leases to release.
type Data struct {
	// PostgresAdmin is a URL of the PostgreSQL server as a superuser; PostgresDatabases are
	// dropped (connections closed) and created empty.
	PostgresAdmin     string
	PostgresDatabases []string
	// MySQLAdmin is a mysql:// URL of the MariaDB server with every right; MySQLDatabases are
	// dropped and created empty.
	MySQLAdmin     string
	MySQLDatabases []string
	// AMQPURL and ManagementURL name the RabbitMQ vhost (the AMQP URL's) that is deleted and
	// created again, its user keeping every permission in it. "" leaves RabbitMQ alone.
	AMQPURL, ManagementURL string
}

// Fresh drops what an earlier run of the demo left in d and creates it empty.
func Fresh(ctx context.Context, d Data) error {
	if d.PostgresAdmin != "" {
		conn, err := pgx.Connect(ctx, d.PostgresAdmin)
		if err != nil {
			return fmt.Errorf("demo: fresh start: postgresql: %w", err)
		}
		defer conn.Close(context.WithoutCancel(ctx))
		for _, db := range d.PostgresDatabases {
			name := pgx.Identifier{db}.Sanitize()
			if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
				return fmt.Errorf("demo: fresh start: drop database %s: %w", db, err)
			}
			if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
				return fmt.Errorf("demo: fresh start: create database %s: %w", db, err)
			}
		}
	}
	if d.MySQLAdmin != "" && len(d.MySQLDatabases) > 0 {
		db, err := openMySQL(d.MySQLAdmin)
		if err != nil {
			return fmt.Errorf("demo: fresh start: mariadb: %w", err)
		}
		defer db.Close()
		for _, name := range d.MySQLDatabases {
			q := "`" + strings.ReplaceAll(name, "`", "``") + "`"
			if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+q+"; CREATE DATABASE "+q+" CHARACTER SET utf8mb4"); err != nil {
				return fmt.Errorf("demo: fresh start: database %s: %w", name, err)
			}
		}
	}
	if d.AMQPURL != "" {
		uri, err := amqp.ParseURI(d.AMQPURL)
		if err != nil {
			return fmt.Errorf("demo: fresh start: rabbitmq url: %w", err)
		}
		mgmt, err := rabbithole.NewClient(d.ManagementURL, uri.Username, uri.Password)
		if err != nil {
			return fmt.Errorf("demo: fresh start: rabbitmq management: %w", err)
		}
		if res, err := mgmt.DeleteVhost(uri.Vhost); err != nil && !isNotFound(err) {
			return fmt.Errorf("demo: fresh start: delete vhost %s: %w", uri.Vhost, err)
		} else if res != nil {
			res.Body.Close()
		}
		if res, err := mgmt.PutVhost(uri.Vhost, rabbithole.VhostSettings{}); err != nil {
			return fmt.Errorf("demo: fresh start: create vhost %s: %w", uri.Vhost, err)
		} else {
			res.Body.Close()
		}
		res, err := mgmt.UpdatePermissionsIn(uri.Vhost, uri.Username, rabbithole.Permissions{Configure: ".*", Write: ".*", Read: ".*"})
		if err != nil {
			return fmt.Errorf("demo: fresh start: permissions in vhost %s: %w", uri.Vhost, err)
		}
		res.Body.Close()
	}
	return nil
}

func isNotFound(err error) bool {
	var e rabbithole.ErrorResponse
	return errors.As(err, &e) && e.StatusCode == 404
}
