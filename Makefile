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

.PHONY: demo test test-go fuzz lint generate check-generated bench load build clean

## demo: start local PostgreSQL, RabbitMQ and Kafka, seed them, serve on http://127.0.0.1:8080
## (built, then exec'd rather than `go run`: go run exits 1 when Ctrl-C reaches it too, whatever
## the demo's own exit status; the demo exits 0 on Ctrl-C and says what it stopped)
demo:
	$(GO) build -o bin/console ./cmd/console && exec bin/console demo

## test: start the services on loopback, run every test with -race, fuzz briefly, tear down
test:
	$(GO) run ./cmd/devstack run -- $(MAKE) --no-print-directory test-go fuzz

# cmd/console runs the chaos, restart, load and browser tests: longer than go test's 10 min default
# under -race on 2 cores.
test-go:
	$(GO) test -race -count=1 -timeout 30m ./...

fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

## screenshots: refresh the README's screenshots in docs/screenshots (the browser tests take them)
screenshots:
	$(GO) run ./cmd/devstack run -- env REDRIVE_SCREENSHOTS=docs $(GO) test -count=1 -run 'Browser' ./cmd/console/

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
	$(GO) run ./cmd/devstack run -- sh -c '$(GO) test -run "^$$" -bench . -benchtime 20x ./ops/outbox/ ./ops/kafka/ ./ops/sampler/ ./ops/store/ && \
		$(GO) test -run "^$$" -bench . -benchtime 5x ./ops/rabbit/ && \
		$(GO) test -run "^$$" -bench . -benchtime 1x ./ops/replay/'

## load: 20 clients for 30 s over the pages and the API while a replay job runs (docs/benchmarks.md)
load:
	$(GO) run ./cmd/devstack run -- env REDRIVE_LOAD_DURATION=$${REDRIVE_LOAD_DURATION:-30s} $(GO) test -count=1 -run '^TestLoadPagesAndAPIWhileReplaying$$' -v ./cmd/console/

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/console ./cmd/console

clean:
	rm -rf bin .demo
