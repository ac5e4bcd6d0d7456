package ops

import "testing"

func TestErrorGroupKey(t *testing.T) {
	long := "x"
	for len(long) < 200 {
		long += "yz é"
	}
	for _, tc := range []struct{ in, want string }{
		{"com.acme.StockException: out of stock for o-17", "com.acme.StockException"},
		{"java.lang.IllegalStateException: boom\n\tat com.acme.Foo.bar(Foo.java:12)", "java.lang.IllegalStateException"},
		{"TimeoutException: 30000 ms", "TimeoutException"},
		{"System.InvalidOperationException: nope", "System.InvalidOperationException"},
		{"payment provider did not answer: 30 s", "payment provider did not answer: # s"}, // not a class
		{"org.acme.v2.StockException", "org.acme.v2.StockException"},                      // a bare class keeps its digits
		// Words holding a digit are ids or numbers: folded, so one bug is one group.
		{"out of stock for o-100", "out of stock for #"},
		{"out of stock for o-104", "out of stock for #"},
		{"timeout after 30s (7)", "timeout after # (#)"},
		{"order 3f2a9c1e-77b0-4c1e-9a2d-5e8f00c1d2b4 not found.", "order # not found."},
		{"lock 0x7ffe12ab held by pid 4412 since 2026-03-01T08:00:00Z", "lock # held by pid # since #:#:#"},
		{"GET /orders/o-1/items?page=2 failed", "GET /orders/#/items?page=# failed"},
		{"amount 12.50 exceeds limit", "amount # exceeds limit"},
		{"café n°5 épuisé", "café n°# épuisé"},
		{"no digits here - at all.", "no digits here - at all."},
		{"  first line  \nsecond", "first line"},
		{"", ""},
	} {
		if got := ErrorGroupKey(tc.in); got != tc.want {
			t.Errorf("ErrorGroupKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := ErrorGroupKey(long); len(got) > maxErrorGroupKey || !utf8Valid(got) {
		t.Errorf("a long line is cut to %d bytes: %q", len(got), got)
	}
}

func utf8Valid(s string) bool { return CleanText(s, len(s)) == s }

func TestInErrorGroup(t *testing.T) {
	for _, tc := range []struct {
		text, want string
		in         bool
	}{
		{"org.acme.StockException", "org.acme.StockException", true},                        // a Kafka class header
		{"org.acme.StockException", "StockException", true},                                 // its simple name
		{"java.net.SocketTimeoutException: read timed out", "SocketTimeoutException", true}, // an outbox last error
		{"java.net.SocketTimeoutException: read timed out", "java.net.SocketTimeoutException", true},
		{"java.net.SocketTimeoutException: read timed out", "TimeoutException", false}, // not a simple name
		{"java.net.SocketTimeoutException: read timed out", "read timed out", false},   // a substring is not a group
		{"upstream returned 503\nat line 2", "upstream returned 503", true},            // no class: the first line
		{"upstream returned 503\nat line 2", "upstream returned #", true},              // …whose key folds the number
		{"upstream returned 503", "503", false},
		{"out of stock for o-100", "out of stock for o-104", true}, // another text of the group
		{"out of stock for o-100", "out of stock for #", true},     // the group's key
		{"out of stock for o-100", "out of stock", false},
		{"timeout after 30s (7)", "timeout after 5s (1)", true},
		{"anything", "", true},
		{"", "X", false},
	} {
		if got := InErrorGroup(tc.text, tc.want); got != tc.in {
			t.Errorf("InErrorGroup(%q, %q) = %v, want %v", tc.text, tc.want, got, tc.in)
		}
	}
}

// springTrace is the stack trace Spring Kafka's DeadLetterPublishingRecoverer writes into
// kafka_dlt-exception-stacktrace (and Spring AMQP's RepublishMessageRecoverer into
// x-exception-stacktrace): the listener's wrapper first, all framework frames, then the cause
// thrown by the application.
func springTrace(frame string) string {
	return "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener method 'public void com.acme.orders.Listener.on(java.lang.String)' threw exception\n" +
		"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.decorateException(KafkaMessageListenerContainer.java:2869)\n" +
		"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.doInvokeOnMessage(KafkaMessageListenerContainer.java:2814)\n" +
		"\tat java.base/java.lang.Thread.run(Thread.java:1583)\n" +
		"Caused by: com.acme.StockException: out of stock for o-17\n" +
		"\tat java.base/java.util.Objects.requireNonNull(Objects.java:259)\n" +
		"\tat kotlin.collections.CollectionsKt.first(Collections.kt:12)\n" +
		"\tat app//" + frame + "(Reserve.java:42)\n" +
		"\tat com.acme.orders.Listener.on(Listener.java:17)\n" +
		"\tat java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(DirectMethodHandleAccessor.java:103)\n" +
		"\t... 15 more\n"
}

// Wolverine's fingerprint: the exception class plus the first application frame of the trace, so
// that one bug is one group and one class thrown from two places is two.
func TestErrorFingerprint(t *testing.T) {
	for _, tc := range []struct{ name, text, trace, want string }{
		{"SpringTrace", "com.acme.StockException: out of stock for o-17", springTrace("com.acme.orders.Reserve.apply"),
			"com.acme.StockException at com.acme.orders.Reserve.apply"},
		{"SameBugOtherIDs", "com.acme.StockException: out of stock for o-99", springTrace("com.acme.orders.Reserve.apply"),
			"com.acme.StockException at com.acme.orders.Reserve.apply"},
		{"OtherPlace", "com.acme.StockException: out of stock for o-17", springTrace("com.acme.billing.Invoice.total"),
			"com.acme.StockException at com.acme.billing.Invoice.total"},
		{"BareClassHeader", "com.acme.StockException", springTrace("com.acme.orders.Reserve.lambda$apply$0"),
			"com.acme.StockException at com.acme.orders.Reserve.lambda$apply$0"},
		{"NoTrace", "com.acme.StockException: out of stock for o-17", "", "com.acme.StockException"},
		{"OnlyLibraryFrames", "java.net.SocketTimeoutException: read timed out",
			"java.net.SocketTimeoutException: read timed out\n\tat java.base/sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:278)\n" +
				"\tat org.apache.kafka.clients.NetworkClient.poll(NetworkClient.java:1)\n\tat com.rabbitmq.client.impl.AMQConnection.start(AMQConnection.java:2)\n" +
				"\tat reactor.core.publisher.Mono.block(Mono.java:3)\n\tat javax.net.ssl.X.y(X.java:4)\n\tat jdk.internal.misc.Unsafe.park(Unsafe.java:5)",
			"java.net.SocketTimeoutException"},
		{"NoClass", "out of stock for o-17", springTrace("com.acme.orders.Reserve.apply"), "out of stock for #"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ErrorFingerprint(tc.text, tc.trace)
			if got != tc.want {
				t.Fatalf("ErrorFingerprint = %q, want %q", got, tc.want)
			}
			if !InErrorGroupTraced(tc.text, tc.trace, got) {
				t.Errorf("its own key does not select it")
			}
			if class := ErrorGroupClass(got); !InErrorGroupTraced(tc.text, tc.trace, class) {
				t.Errorf("its class %q (a filter kept from before fingerprints) does not select it", class)
			}
		})
	}
	key := "com.acme.StockException at com.acme.orders.Reserve.lambda$apply$0"
	if got := ErrorGroupKey(key); got != key {
		t.Errorf("a fingerprint is its own key: %q", got) // a note or a filter naming it selects it
	}
	key = "com.acme.StockException at com.acme.orders.Reserve.apply"
	if InErrorGroupTraced("com.acme.StockException: x", springTrace("com.acme.billing.Invoice.total"), key) {
		t.Error("a fingerprint selects the same class thrown elsewhere")
	}
	if !IsExceptionClass(key) || ErrorGroupClass(key) != "com.acme.StockException" || ErrorGroupClass("out of stock at # o'clock") != "out of stock at # o'clock" {
		t.Errorf("a fingerprint's class: %v %q", IsExceptionClass(key), ErrorGroupClass(key))
	}
}
