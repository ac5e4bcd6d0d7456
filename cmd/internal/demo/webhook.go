package demo

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// WebhookReceiver is the demo's on-call webhook: an HTTP server on loopback that accepts every
// notification the console delivers (POST /hook, answered 204) and keeps the last 200, so that the
// notifications page's delivery log fills with real deliveries. GET / lists them as JSON, newest
// first.
type WebhookReceiver struct {
	srv *http.Server
	url string

	mu       sync.Mutex
	received []Received
	total    int
}

// Received is one delivery the receiver took.
type Received struct {
	At        time.Time       `json:"at"`
	Signature string          `json:"signature"`
	Body      json.RawMessage `json:"body"`
}

// StartWebhookReceiver listens on addr ("127.0.0.1:0" for a free port).
func StartWebhookReceiver(addr string) (*WebhookReceiver, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	w := &WebhookReceiver{url: "http://" + l.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook", func(rw http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || !json.Valid(b) {
			http.Error(rw, "want a JSON body", http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.total++
		w.received = append(w.received, Received{At: time.Now().UTC(), Signature: r.Header.Get("X-Redrive-Signature"), Body: b})
		if len(w.received) > 200 {
			w.received = w.received[len(w.received)-200:]
		}
		w.mu.Unlock()
		rw.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /{$}", func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		out := make([]Received, 0, len(w.received))
		for i := len(w.received) - 1; i >= 0; i-- {
			out = append(out, w.received[i])
		}
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(out)
	})
	w.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := w.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return
		}
	}()
	return w, nil
}

// URL is where the console delivers (the channel's url).
func (w *WebhookReceiver) URL() string { return w.url + "/hook" }

// ListURL lists what was received.
func (w *WebhookReceiver) ListURL() string { return w.url + "/" }

// Count is how many deliveries the receiver took.
func (w *WebhookReceiver) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

// Close stops the receiver.
func (w *WebhookReceiver) Close() { _ = w.srv.Close() }
