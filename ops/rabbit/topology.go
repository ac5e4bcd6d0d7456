package rabbit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"

	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// watchedList is a management listing (exchanges, bindings) of the one watched vhost when there is
// one (a smaller answer), else of every vhost, which the caller filters.
func watchedList[T any](ctx context.Context, b *Broker, in func(vhost string) ([]T, error), all func() ([]T, error)) ([]T, error) {
	if len(b.vhosts) == 1 {
		return call(ctx, func() ([]T, error) { return in(b.vhosts[0]) })
	}
	return call(ctx, all)
}

// Topology reads queues, exchanges and bindings (one management call each, concurrently) and
// resolves, for every queue with a dead-letter exchange, the queues its dead letters reach. See
// Edge for what is exact and what is approximate. Errors are those of Queues.
func (b *Broker) Topology(ctx context.Context) (Topology, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	var (
		wg        sync.WaitGroup
		queues    []Queue
		exchanges []rabbithole.ExchangeInfo
		bindings  []rabbithole.BindingInfo
		qErr      error
		xErr      error
		bErr      error
	)
	wg.Go(func() { queues, qErr = b.listQueues(ctx) })
	wg.Go(func() { exchanges, xErr = watchedList(ctx, b, b.rh.ListExchangesIn, b.rh.ListExchanges) })
	wg.Go(func() { bindings, bErr = watchedList(ctx, b, b.rh.ListBindingsIn, b.rh.ListBindings) })
	wg.Wait()
	for _, e := range []struct {
		what string
		err  error
	}{{"queues", qErr}, {"exchanges", xErr}, {"bindings", bErr}} {
		if e.err != nil {
			return Topology{}, b.fail("topology: "+e.what, e.err)
		}
	}
	xs := make([]exchange, 0, len(exchanges))
	for _, x := range exchanges {
		if b.watched(x.Vhost) {
			ae, _ := x.Arguments["alternate-exchange"].(string)
			xs = append(xs, exchange{Vhost: x.Vhost, Name: x.Name, Type: x.Type, Alternate: ae})
		}
	}
	bs := make([]binding, 0, len(bindings))
	for _, bi := range bindings {
		if b.watched(bi.Vhost) {
			bs = append(bs, binding{Vhost: bi.Vhost, Source: bi.Source, Destination: bi.Destination,
				ToExchange: bi.DestinationType == "exchange", Key: bi.RoutingKey})
		}
	}
	return buildTopology(queues, xs, bs, b.isDLQName), nil
}

// Router reads vhost's exchanges and bindings once (two management calls) and returns route, which
// lists the queues of vhost that a message published to exchangeName with routingKey reaches
// through the bindings as the broker had them then, sorted: the default exchange ("") routes to the
// queue the key names; exchange-to-exchange bindings and alternate exchanges are followed, as
// Topology resolves its edges. exact is false when routing depends on what Redrive cannot see (a
// headers exchange, a plugin's type): the queues are then every queue bound there. An exchange
// that does not exist routes nowhere. One reading answers a plan's many destinations: how a
// message Spring's RepublishMessageRecoverer put in a DLQ itself (x-original-exchange and
// x-original-routingKey, no x-death) is traced to the queue, and so the consumer, it was going to,
// and which other queues a replay reaches. Errors are those of Topology.
func (b *Broker) Router(ctx context.Context, vhost string) (route func(exchange, routingKey string) (queues []string, exact bool), err error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	var (
		wg        sync.WaitGroup
		exchanges []rabbithole.ExchangeInfo
		bindings  []rabbithole.BindingInfo
		xErr      error
		bErr      error
	)
	wg.Go(func() {
		exchanges, xErr = call(ctx, func() ([]rabbithole.ExchangeInfo, error) { return b.rh.ListExchangesIn(vhost) })
	})
	wg.Go(func() {
		bindings, bErr = call(ctx, func() ([]rabbithole.BindingInfo, error) { return b.rh.ListBindingsIn(vhost) })
	})
	wg.Wait()
	op := "routes in vhost " + vhost
	if xErr != nil {
		return nil, b.fail(op+": exchanges", xErr)
	}
	if bErr != nil {
		return nil, b.fail(op+": bindings", bErr)
	}
	r := &router{queues: map[string]bool{}, exchanges: map[string]exchange{}, bySource: map[string][]binding{}}
	for _, x := range exchanges {
		ae, _ := x.Arguments["alternate-exchange"].(string)
		r.exchanges[x.Name] = exchange{Vhost: x.Vhost, Name: x.Name, Type: x.Type, Alternate: ae}
	}
	for _, bi := range bindings {
		bd := binding{Vhost: bi.Vhost, Source: bi.Source, Destination: bi.Destination, ToExchange: bi.DestinationType == "exchange", Key: bi.RoutingKey}
		r.bySource[bd.Source] = append(r.bySource[bd.Source], bd)
		if !bd.ToExchange {
			r.queues[bd.Destination] = true // every queue is bound to the default exchange
		}
	}
	return func(exchangeName, routingKey string) ([]string, bool) {
		e := Edge{Exchange: exchangeName, RoutingKey: routingKey, ToQueues: []string{}}
		r.resolve(&e, []string{routingKey}, false)
		return e.ToQueues, !e.AllBound
	}, nil
}

type exchange struct {
	Vhost, Name, Type string
	Alternate         string // alternate-exchange argument
}

type binding struct {
	Vhost, Source, Destination string
	ToExchange                 bool
	Key                        string
}

// router resolves routes in one vhost.
type router struct {
	queues    map[string]bool
	exchanges map[string]exchange
	bySource  map[string][]binding
}

func buildTopology(queues []Queue, exchanges []exchange, bindings []binding, isDLQName func(string) bool) Topology {
	routers := map[string]*router{}
	get := func(vhost string) *router {
		r := routers[vhost]
		if r == nil {
			r = &router{queues: map[string]bool{}, exchanges: map[string]exchange{}, bySource: map[string][]binding{}}
			routers[vhost] = r
		}
		return r
	}
	for _, q := range queues {
		get(q.Vhost).queues[q.Name] = true
	}
	for _, x := range exchanges {
		get(x.Vhost).exchanges[x.Name] = x
	}
	ownKeys := map[QueueRef][]string{}
	for _, bd := range bindings {
		get(bd.Vhost).bySource[bd.Source] = append(get(bd.Vhost).bySource[bd.Source], bd)
		if !bd.ToExchange && bd.Key != "" && !strings.ContainsAny(bd.Key, "*#") {
			ref := QueueRef{Vhost: bd.Vhost, Name: bd.Destination}
			ownKeys[ref] = append(ownKeys[ref], bd.Key)
		}
	}

	t := Topology{Edges: []Edge{}, DLQs: map[QueueRef]bool{}, RetryQueues: map[QueueRef]bool{}, RetryLoops: []RetryLoop{}}
	byRef := map[QueueRef]Queue{}
	edgeOf := map[QueueRef]*Edge{}
	for _, q := range queues {
		byRef[q.Ref()] = q
	}
	for _, q := range queues {
		if !q.HasDeadLetterExchange {
			continue
		}
		e := Edge{FromVhost: q.Vhost, FromQueue: q.Name, Exchange: q.DeadLetterExchange, RoutingKey: q.DeadLetterRoutingKey, ToQueues: []string{}}
		keys := []string{q.DeadLetterRoutingKey}
		if q.DeadLetterRoutingKey == "" {
			keys = uniqueSorted(append([]string{q.Name}, ownKeys[q.Ref()]...))
			e.OwnKeys = keys
		}
		get(q.Vhost).resolve(&e, keys, q.DeadLetterStrategy == rabbitmodel.StrategyAtLeastOnce)
		if q.DeadLetterAsked == rabbitmodel.StrategyAtLeastOnce && q.DeadLetterStrategy != rabbitmodel.StrategyAtLeastOnce {
			e.Note = joinNotes(e.Note, "dead-letter-strategy at-least-once is set, but RabbitMQ applies it only with overflow "+
				"reject-publish: with overflow "+cmp.Or(q.Overflow, "drop-head")+" it dead-letters at most once (what cannot be "+
				"routed is dropped)")
		}
		t.Edges = append(t.Edges, e)
	}
	sort.Slice(t.Edges, func(i, j int) bool {
		if t.Edges[i].FromVhost != t.Edges[j].FromVhost {
			return t.Edges[i].FromVhost < t.Edges[j].FromVhost
		}
		return t.Edges[i].FromQueue < t.Edges[j].FromQueue
	})
	for i := range t.Edges {
		edgeOf[QueueRef{Vhost: t.Edges[i].FromVhost, Name: t.Edges[i].FromQueue}] = &t.Edges[i]
	}

	// Retry loops: R has a TTL, R → W, and W → R.
	returns := map[[2]QueueRef]bool{} // {retry, work} edges that bring messages back: not dead-lettering into a DLQ
	for _, e := range t.Edges {
		r := QueueRef{Vhost: e.FromVhost, Name: e.FromQueue}
		rq := byRef[r]
		if rq.MessageTTL == nil {
			continue
		}
		for _, w := range e.ToQueues {
			wref := QueueRef{Vhost: e.FromVhost, Name: w}
			if w == e.FromQueue || edgeOf[wref] == nil || !slices.Contains(edgeOf[wref].ToQueues, e.FromQueue) {
				continue
			}
			t.RetryLoops = append(t.RetryLoops, RetryLoop{Vhost: e.FromVhost, RetryQueue: e.FromQueue, WorkQueue: w,
				Delay: time.Duration(*rq.MessageTTL) * time.Millisecond})
			t.RetryQueues[r] = true
			returns[[2]QueueRef{r, wref}] = true
		}
	}
	sort.Slice(t.RetryLoops, func(i, j int) bool {
		a, b := t.RetryLoops[i], t.RetryLoops[j]
		if a.Vhost != b.Vhost {
			return a.Vhost < b.Vhost
		}
		if a.RetryQueue != b.RetryQueue {
			return a.RetryQueue < b.RetryQueue
		}
		return a.WorkQueue < b.WorkQueue
	})

	// A queue is a DLQ when its name says so, or when a queue whose dead-lettering is not a delay
	// dead-letters into it (not a retry queue, nor the work queue of a retry loop's return). A
	// delay (Queue.IsDelay: a TTL, a dead-letter exchange and nothing taking messages from it)
	// dead-letters only what expired waiting, on its way back to the queue it delays for: its
	// target is a work queue, whose consumer's acks are its work, not lost dead letters. A delay
	// queue that is itself a DLQ passes dead letters on, so it counts: that is found by going
	// round until no DLQ is added.
	for _, q := range queues {
		if isDLQName != nil && isDLQName(q.Name) {
			t.DLQs[q.Ref()] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, e := range t.Edges {
			from := QueueRef{Vhost: e.FromVhost, Name: e.FromQueue}
			if byRef[from].IsDelay() && !t.DLQs[from] {
				continue
			}
			for _, to := range e.ToQueues {
				ref := QueueRef{Vhost: e.FromVhost, Name: to}
				if !t.RetryQueues[ref] && !returns[[2]QueueRef{from, ref}] && !t.DLQs[ref] {
					t.DLQs[ref], changed = true, true
				}
			}
		}
	}
	t.Queues = make([]Queue, len(queues))
	for i, q := range queues {
		q.IsDeadLetterQueue = t.DLQs[q.Ref()]
		t.Queues[i] = q
	}
	return t
}

// joinNotes joins an edge's notes with "; ".
func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// keptNote is what happens to a dead letter no queue takes when its queue dead-letters at least
// once (a quorum queue with dead-letter-strategy at-least-once and overflow reject-publish):
// RabbitMQ keeps it in the queue (messages_dlx) and retries until a queue confirms it.
const keptNote = "with at-least-once dead-lettering the queue keeps these dead letters (held for dead-lettering, " +
	"counted toward its max-length) and retries them until a queue takes them"

// resolve fills e's route for the given routing keys; kept: the queue dead-letters at least once,
// so what no queue takes stays in it rather than being dropped.
func (r *router) resolve(e *Edge, keys []string, kept bool) {
	dropped := func(why, drop string) string {
		if kept {
			return why + ": " + keptNote
		}
		return why + ": " + drop
	}
	if e.Exchange == "" {
		e.ExchangeType = "direct"
		for _, k := range keys {
			if r.queues[k] {
				e.ToQueues = append(e.ToQueues, k)
			}
		}
		e.ToQueues = uniqueSorted(e.ToQueues)
		if len(e.ToQueues) == 0 {
			e.Note = dropped("the default exchange routes to the queue named by the routing key, and no such queue exists", "dead letters are dropped")
		}
		return
	}
	x, ok := r.exchanges[e.Exchange]
	if !ok {
		e.Missing = true
		e.Note = dropped(fmt.Sprintf("exchange %q does not exist", e.Exchange), "the broker drops these dead letters")
		return
	}
	e.ExchangeType = x.Type
	found := map[string]bool{}
	var notes []string
	for _, k := range keys {
		r.route(e.Exchange, k, found, map[string]bool{}, &e.AllBound, &notes)
	}
	for q := range found {
		e.ToQueues = append(e.ToQueues, q)
	}
	sort.Strings(e.ToQueues)
	switch {
	case len(notes) > 0:
		e.Note = strings.Join(uniqueSorted(notes), "; ")
		if len(e.ToQueues) == 0 && kept {
			e.Note += ": " + keptNote
		}
	case len(e.ToQueues) == 0 && e.RoutingKey == "":
		e.Note = "no binding matches the queue's own routing keys: dead letters published with other keys may still route"
		if kept {
			e.Note += "; those that do not stay in the queue (at-least-once dead-lettering) and are retried"
		}
	case len(e.ToQueues) == 0:
		e.Note = dropped("no binding matches the dead-letter routing key", "dead letters are dropped")
	}
}

// route adds to found the queues exchange x routes key to, following exchange-to-exchange
// bindings and the alternate exchange.
func (r *router) route(name, key string, found, visited map[string]bool, allBound *bool, notes *[]string) {
	if visited[name] {
		return
	}
	visited[name] = true
	x, ok := r.exchanges[name]
	if !ok {
		*notes = append(*notes, fmt.Sprintf("exchange %q does not exist", name))
		return
	}
	matched := false
	for _, bd := range r.bySource[name] {
		var hit bool
		switch x.Type {
		case "fanout":
			hit = true
		case "direct":
			hit = bd.Key == key
		case "topic":
			hit = topicMatch(bd.Key, key)
		case "headers":
			hit, *allBound = true, true
			*notes = append(*notes, fmt.Sprintf("headers exchange %q routes by message headers: showing all bound queues", name))
		default:
			hit, *allBound = true, true
			*notes = append(*notes, fmt.Sprintf("exchange %q of type %s: showing all bound queues", name, x.Type))
		}
		if !hit {
			continue
		}
		matched = true
		if bd.ToExchange {
			r.route(bd.Destination, key, found, visited, allBound, notes)
		} else {
			found[bd.Destination] = true
		}
	}
	if !matched && x.Alternate != "" {
		r.route(x.Alternate, key, found, visited, allBound, notes)
	}
}

// topicMatch reports whether a topic binding pattern matches a routing key: words are separated
// by dots, * matches exactly one word and # zero or more.
func topicMatch(pattern, key string) bool {
	return matchWords(strings.Split(pattern, "."), strings.Split(key, "."))
}

func matchWords(p, k []string) bool {
	// Iterative with backtracking to the last #, which keeps it linear-ish for real patterns.
	pi, ki := 0, 0
	starP, starK := -1, -1
	for ki < len(k) {
		switch {
		case pi < len(p) && p[pi] == "#":
			starP, starK = pi, ki
			pi++
		case pi < len(p) && (p[pi] == "*" || p[pi] == k[ki]):
			pi++
			ki++
		case starP >= 0:
			starK++
			pi, ki = starP+1, starK
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == "#" {
		pi++
	}
	return pi == len(p)
}

func uniqueSorted(s []string) []string {
	if len(s) == 0 {
		return []string{}
	}
	sort.Strings(s)
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}
