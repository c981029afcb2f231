/*
 * rpc-webflux: the RPC provider on Spring WebFlux and the Reactor Netty that Spring Boot ships:
 * the same two routes as rpc-tomcat (MvcProvider), annotated, answering Mono<RpcResponse>. Reactor
 * Netty runs max(cores, 4) event loops on Java NIO, each a Selector serving its share of the
 * connections (one of them accepts them too), and keeps a connection alive for as many requests as
 * the client sends.
 *
 * Where the call runs: with no simulated work, on the event loop that read the request, as the
 * plain Netty provider does. With --work-ms or --spin-us it would stall every connection of that
 * loop, so the call is subscribed on Schedulers.boundedElastic(), Reactor's place for blocking
 * work: as shipped, at most 10 x cores threads (20 on 2 cores), further calls queued (100,000 at
 * most). --pool N sets that cap to N through the system property
 * reactor.schedulers.defaultBoundedElasticSize, read once when Reactor's Schedulers class loads,
 * so main sets it first. No --pool is the honest "default as shipped"; --pool 200 is the "equal
 * pools" setting, as many threads able to block as Tomcat's 200 (and the plain Netty provider's).
 *
 * --keep-alive-requests N > 0 sets Spring Boot's server.netty.max-keep-alive-requests, which Boot
 * applies as a NettyServerCustomizer calling Reactor Netty's HttpServer.maxKeepAliveRequests(N):
 * the Nth answer on a connection says Connection: close. 0 or absent: unlimited, as shipped.
 * --backlog and --idle-timeout-s are ignored: Reactor Netty never drops an idle connection.
 *
 * Build: make -C code rpc
 * Run:   cd code/java/rpc && $(../../tools/find-jdk)/bin/java -cp target/iom-rpc.jar:$(cat target/classpath.txt) \
 *            iom.rpc.spring.FluxProvider --port 8088 [--work-ms 20 [--pool 200]] [--keep-alive-requests 100]
 * Try:   curl -s 'http://127.0.0.1:8088/?id=101'
 *        curl -s -H 'Content-Type: application/json' \
 *            -d '{"service":"iom.rpc.UserService","method":"findById","args":[101]}' http://127.0.0.1:8088/
 * Chapter: book/java/rpc.md
 */
package iom.rpc.spring;

import iom.rpc.Provider;
import iom.rpc.RpcOptions;
import iom.rpc.RpcRequest;
import iom.rpc.RpcResponse;
import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.WebApplicationType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

public final class FluxProvider {
    private FluxProvider() {}

    // BEGIN flux-routes
    @RestController
    public static class Routes {
        private final Provider provider;
        private final boolean blocking;

        Routes(Provider provider, RpcOptions opts) {
            this.provider = provider;
            this.blocking = opts.contract.workMs > 0 || opts.contract.spinUs > 0;
        }

        @PostMapping("/")
        public Mono<RpcResponse> call(@RequestBody RpcRequest request) {
            return answer(MvcProvider.checked(request));
        }

        @GetMapping("/")
        public Mono<RpcResponse> findById(@RequestParam int id) {
            return answer(RpcRequest.findById(id));
        }

        /** On the event loop, or, when the call blocks or spins, on a boundedElastic thread. */
        private Mono<RpcResponse> answer(RpcRequest request) {
            Mono<RpcResponse> call = Mono.fromSupplier(() -> provider.invoke(request));
            return blocking ? call.subscribeOn(Schedulers.boundedElastic()) : call;
        }
    }
    // END flux-routes

    public static void main(String[] args) {
        RpcOptions opts = RpcOptions.parse("rpc-webflux", args);
        if (opts.contract.pool > 0) { // before anything loads reactor.core.scheduler.Schedulers
            System.setProperty("reactor.schedulers.defaultBoundedElasticSize", Integer.toString(opts.contract.pool));
        }
        Map<String, Object> p = new HashMap<>();
        if (opts.keepAliveRequests > 0) {
            p.put("server.netty.max-keep-alive-requests", opts.keepAliveRequests);
        }
        SpringApp.bootProvider(opts, Routes.class, WebApplicationType.REACTIVE, p);
    }
}
