/*
 * rpc-consumer: source write-up 004's consumer, the web endpoint wrk measured in front of each
 * provider. Spring MVC on Tomcat as shipped (as rpc-tomcat: 200 threads at most, a connection
 * closed after 100 requests; --pool and --keep-alive-requests as there): GET /?id=N makes the
 * RPC call findById(N) to the provider at --provider URL, a POST of the call's JSON through
 * OkHttp's synchronous execute(), which blocks the Tomcat thread for the whole round trip, and
 * answers the user as JSON, {"id":N,"name":"user-N"}.
 *
 * As the write-up's framework did: one shared OkHttpClient; each attempt bounded by a call
 * timeout of --timeout-ms (200); an IOException (refused, reset, timed out) or a non-2xx status
 * is retried, --retries times (2); a provider still failing after that, or answering a failed
 * call or bytes that are not an answer, makes a 502. OkHttp's other settings are as shipped:
 * its connection pool keeps at most 5 idle connections for 5 minutes (so with more than 5 calls
 * at once, connections beyond 5 are closed once idle and opened anew), it retries a stale pooled
 * connection once by itself (retryOnConnectionFailure), and its dispatcher's limits (64 calls, 5
 * per host) do not apply: they bound enqueue(), never execute().
 *
 * Build: make -C code rpc
 * Run:   cd code/java/rpc && $(../../tools/find-jdk)/bin/java -cp target/iom-rpc.jar:$(cat target/classpath.txt) \
 *            iom.rpc.spring.Consumer --port 8088 --provider http://127.0.0.1:8089/ [--timeout-ms 200 --retries 2]
 * Try:   curl -s 'http://127.0.0.1:8088/?id=101'
 * Chapter: book/java/rpc.md
 */
package iom.rpc.spring;

import iom.rpc.Codec;
import iom.rpc.RpcOptions;
import iom.rpc.RpcRequest;
import iom.rpc.RpcResponse;
import iom.rpc.User;
import java.io.IOException;
import java.time.Duration;
import okhttp3.HttpUrl;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.springframework.boot.WebApplicationType;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;
import tools.jackson.core.JacksonException;

public final class Consumer {
    private static final MediaType JSON = MediaType.get("application/json");

    private Consumer() {}

    // BEGIN consumer-call
    @RestController
    public static class Routes {
        private final RpcOptions opts;
        private final HttpUrl provider;
        private final OkHttpClient http;

        Routes(RpcOptions opts) {
            this.opts = opts;
            this.provider = HttpUrl.get(opts.provider);
            this.http = new OkHttpClient.Builder().callTimeout(Duration.ofMillis(opts.timeoutMs)).build();
        }

        @GetMapping("/")
        public User findById(@RequestParam int id) {
            Request call = new Request.Builder().url(provider)
                    .post(RequestBody.create(Codec.JSON.writeRequest(RpcRequest.findById(id)), JSON)).build();
            String failure = "";
            for (int attempt = 0; attempt <= opts.retries; attempt++) {
                try (Response response = http.newCall(call).execute()) {
                    if (response.isSuccessful()) {
                        return user(response.body().bytes());
                    }
                    failure = "HTTP " + response.code();
                } catch (IOException e) {
                    failure = e.toString(); // the response, if any, is closed; the next attempt follows
                }
            }
            throw new ResponseStatusException(HttpStatus.BAD_GATEWAY,
                    "provider failed " + (opts.retries + 1) + " times, last: " + failure);
        }
    }
    // END consumer-call

    private static User user(byte[] body) {
        RpcResponse answer;
        try {
            answer = Codec.JSON.readResponse(body);
        } catch (JacksonException e) {
            throw new ResponseStatusException(HttpStatus.BAD_GATEWAY, "not an answer: " + e.getOriginalMessage(), e);
        }
        if (!answer.status() || !(answer.data() instanceof User u)) {
            throw new ResponseStatusException(HttpStatus.BAD_GATEWAY, "the call failed: " + answer.error());
        }
        return u;
    }

    public static void main(String[] args) {
        RpcOptions opts = RpcOptions.parse("rpc-consumer", args);
        if (HttpUrl.parse(opts.provider) == null) {
            System.err.println("rpc-consumer: --provider wants the provider's URL, e.g. http://127.0.0.1:8089/, not '"
                    + opts.provider + "'");
            System.exit(1);
        }
        SpringApp.boot(opts, WebApplicationType.SERVLET, MvcProvider.tomcat(opts), Routes.class);
    }
}
