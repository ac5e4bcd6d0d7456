// Package pgtest gives each test its own database on the real PostgreSQL that `make test` starts
// (REDRIVE_TEST_PG_DSN). Tests never share tables, so they run in parallel and leave nothing behind.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the variable holding the admin DSN of the test PostgreSQL.
const EnvDSN = "REDRIVE_TEST_PG_DSN"

// AdminDSN returns the admin DSN, failing the test (never skipping it) when it is missing.
func AdminDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		tb.Fatalf("%s is not set: run the tests with `make test`, which starts PostgreSQL on loopback", EnvDSN)
	}
	return dsn
}

// NewDatabase creates an empty database for this test, drops it at cleanup, and returns its DSN.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := AdminDSN(tb)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "t_" + hex.EncodeToString(b)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("pgtest: connect %s: %v", EnvDSN, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, admin); err == nil {
			_, _ = conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			conn.Close(ctx)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("pgtest: parse %s: %v", EnvDSN, err)
	}
	u.Path = "/" + name
	return u.String()
}

// Exec runs SQL statements on dsn, failing the test on error.
func Exec(tb testing.TB, dsn string, sql string, args ...any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		tb.Fatalf("pgtest: exec %.80q: %v", sql, err)
	}
}
