# syntax=docker/dockerfile:1
# Build: a static binary (templ output is committed, so no code generation here).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/console ./cmd/console

# Run: no shell, no package manager, a non-root user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/console /usr/local/bin/console
COPY configs/console.example.yaml /etc/redrive/console.example.yaml
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/console"]
CMD ["serve", "--config", "/etc/redrive/console.yaml"]
