# Redrive — the two commands a newcomer needs are `make demo` and `make test`.
GO      ?= go
# helm as a Go module (the version deploy/helm/chart_test.go renders with; keep them in step)
HELM ?= $(GO) run helm.sh/helm/v3/cmd/helm@v3.22.0
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
# Fuzz targets run this long each inside `make test`.
# A count, not a duration: a duration's deadline races Go's fuzz workers on a loaded machine and
# fails with a bare "context deadline exceeded" and no input (golang/go#75804).
FUZZTIME ?= 50000x

.PHONY: demo test test-go test-rabbitmq4 fuzz lint generate check-generated bench load build clean

## demo: start local PostgreSQL, MariaDB, RabbitMQ and Kafka, seed them afresh (every start drops
## the previous run's data), serve on http://127.0.0.1:8080
## (RabbitMQ 3.10; REDRIVE_DEMO_RABBITMQ=4 make demo runs RabbitMQ 4.0 instead)
## (built, then exec'd rather than `go run`: go run exits 1 when Ctrl-C reaches it too, whatever
## the demo's own exit status; the demo exits 0 on Ctrl-C and says what it stopped)
demo:
	$(GO) build -o bin/console ./cmd/console && exec bin/console demo

## test: start the services on loopback, run every test with -race, run the RabbitMQ tests again
## on RabbitMQ 4.0, fuzz briefly, tear down
test:
	$(GO) run ./cmd/devstack run -- $(MAKE) --no-print-directory test-go test-rabbitmq4 fuzz

# cmd/console runs the chaos, restart, load and browser tests: longer than go test's 10 min default
# under -race on 2 cores.
test-go:
	$(GO) test -race -count=1 -timeout 30m ./...

# The packages whose tests use the test RabbitMQ (they import ops/rabbittest), listed by go list so
# that a package adding such tests runs on RabbitMQ 4.0 without anyone remembering to add it here.
# cmd/console's whole run takes 10-16 min under -race on 2 cores, too long to repeat: of it, only
# the tests that use the test RabbitMQ run again (scripts/rabbittests finds them); the others test
# Kafka, outboxes, auth and pages, or start a RabbitMQ 3.10 node of their own (the chaos test).
RABBIT_PKGS = $(shell $(GO) list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | \
	awk '/ github.com\/redrive\/redrive\/ops\/rabbittest( |$$)/ { print $$1 }')
CONSOLE_PKG = github.com/redrive/redrive/cmd/console

# test-rabbitmq4: the RabbitMQ tests again, on the RabbitMQ 4.0 node that `devstack run` starts
# beside 3.10 (the tests read REDRIVE_TEST_AMQP_URL and REDRIVE_TEST_RABBIT_MGMT_URL). Without the
# 4.0 node's variables it fails, rather than test 3.10 twice or nothing.
test-rabbitmq4:
	@test -n "$$REDRIVE_TEST_AMQP_URL_RABBITMQ4" -a -n "$$REDRIVE_TEST_RABBIT_MGMT_URL_RABBITMQ4" || { \
		echo "test-rabbitmq4: REDRIVE_TEST_AMQP_URL_RABBITMQ4 and REDRIVE_TEST_RABBIT_MGMT_URL_RABBITMQ4 are not set:" \
			"run it inside go run ./cmd/devstack run (make test does)" >&2; exit 1; }
	@pkgs=$$(echo '$(RABBIT_PKGS)' | tr ' ' '\n' | grep -vx '$(CONSOLE_PKG)'); \
	test -n "$$pkgs" || { echo "test-rabbitmq4: go list found no package whose tests use ops/rabbittest" >&2; exit 1; }; \
	console_tests=$$($(GO) run ./scripts/rabbittests ./cmd/console) || exit 1; \
	echo "test-rabbitmq4: on RabbitMQ 4.0 at $$REDRIVE_TEST_RABBIT_MGMT_URL_RABBITMQ4:" $$pkgs "and cmd/console's RabbitMQ tests"; \
	export REDRIVE_TEST_AMQP_URL=$$REDRIVE_TEST_AMQP_URL_RABBITMQ4 REDRIVE_TEST_RABBIT_MGMT_URL=$$REDRIVE_TEST_RABBIT_MGMT_URL_RABBITMQ4; \
	set -x; \
	$(GO) test -race -count=1 -timeout 30m $$pkgs; pkgs_status=$$?; \
	$(GO) test -race -count=1 -timeout 30m -run "$$console_tests" $(CONSOLE_PKG) && exit $$pkgs_status

fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

## screenshots: refresh the README's gallery in docs/screenshots from the demo's data (a demo on
## free ports, a minute of history, each page in headless chromium at 1440 px)
screenshots:
	$(GO) build -o bin/console ./cmd/console && $(GO) run ./cmd/internal/demo/screenshots -console bin/console -out docs/screenshots

## lint: go mod tidy (unchanged), go vet, gofmt and staticcheck
lint:
	$(GO) mod tidy -diff
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(HELM) lint --strict deploy/helm/redrive
	$(HELM) template redrive deploy/helm/redrive --set podDisruptionBudget.enabled=true --set serviceMonitor.enabled=true > /dev/null

## generate: regenerate templ code
generate:
	$(GO) tool templ generate

## check-generated: fail when the committed templ output is stale
check-generated: generate
	git diff --exit-code -- '*_templ.go'

## bench: the benchmarks recorded in docs/benchmarks.md (starts the services like make test)
bench:
	$(GO) run ./cmd/devstack run -- sh -c '$(GO) test -run "^$$" -bench . -benchtime 20x ./ops/outbox/... ./ops/kafka/ ./ops/sampler/ ./ops/store/ && \
		$(GO) test -run "^$$" -bench . -benchtime 5x ./ops/rabbit/ && \
		$(GO) test -run "^$$" -bench . -benchtime 1x ./ops/replay/'

## load: 20 clients for 30 s over the pages and the API while a replay job runs (docs/benchmarks.md)
load:
	$(GO) run ./cmd/devstack run -- env REDRIVE_LOAD_DURATION=$${REDRIVE_LOAD_DURATION:-30s} $(GO) test -count=1 -run '^TestLoadPagesAndAPIWhileReplaying$$' -v ./cmd/console/

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/console ./cmd/console

clean:
	rm -rf bin .demo
