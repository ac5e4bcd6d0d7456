// Command console is Redrive: an ops console for outboxes, consumer lag and dead letters.
//
//	console serve [--config FILE]   serve the console (default config: configs/console.yaml)
//	console doctor [--config FILE] [--json]
//	                                check every configured dependency and right, change nothing
//	console demo  [--listen ADDR]   start local PostgreSQL, RabbitMQ and Kafka, seed them, serve
//	console hash-password           print the bcrypt hash of a password read from stdin
//	console hash-token              print a new API token and the SHA-256 to configure
//	console version
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "console:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		args = []string{"serve"}
	}
	switch args[0] {
	case "serve":
		return serveCommand(ctx, args[1:], getenv, stdout)
	case "doctor":
		return doctorCommand(ctx, args[1:], getenv, stdout)
	case "demo":
		return demoCommand(ctx, args[1:], getenv, stdout)
	case "hash-password":
		return hashPasswordCommand(args[1:], os.Stdin, stdout, os.Stderr)
	case "hash-token":
		return hashTokenCommand(args[1:], stdout, os.Stderr)
	case "version":
		_, err := fmt.Fprintln(stdout, "redrive console", version)
		return err
	case "help", "-h", "--help":
		_, err := fmt.Fprint(stdout, usage)
		return err
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

const usage = `usage:
  console serve [--config FILE]   serve the console (default: configs/console.yaml)
  console doctor [--config FILE] [--json]
                                  check every dependency and right the config needs, changing
                                  nothing; exit status 1 when a check failed
  console demo [--listen ADDR] [--kafka ADDR] [--dir DIR]
                                  start local PostgreSQL, RabbitMQ and Kafka, seed data, serve
  console hash-password [--cost N]
                                  read a password from stdin, print its bcrypt hash (auth.users)
  console hash-token [--name NAME] [--role ROLE]
                                  print a new API token and its sha256 entry (auth.tokens)
  console version                 print the version
`
