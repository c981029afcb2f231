/*
 * rpc-tomcat, rpc-tomcat-vt: the RPC provider as source write-up 004's author first wrote it,
 * Spring MVC on the Tomcat that Spring Boot ships: a @RestController whose POST / takes the call
 * (@RequestBody RpcRequest, decoded by Spring's Jackson converter) and answers provider.invoke()'s
 * RpcResponse, and whose GET /?id=N answers findById(N), the route wrk hits. Tomcat's NIO
 * connector: an acceptor thread, a poller thread (a Selector), and a worker pool of 200 threads at
 * most (10 kept spare) that runs each request, the simulated work (--work-ms, --spin-us) included.
 * A connection is closed after its 100th request. With --virtual-threads each request gets a
 * virtual thread instead (Tomcat's VirtualThreadExecutor): no pool, so --pool means nothing there.
 *
 * Flags to Spring Boot properties: --pool N sets server.tomcat.threads.max (and threads.min-spare
 * to at most N); --keep-alive-requests N > 0 sets server.tomcat.max-keep-alive-requests to N, 0 to
 * -1 (unlimited); --virtual-threads sets spring.threads.virtual.enabled; --host and --port set
 * server.address and server.port. Everything else is as shipped (--backlog and --idle-timeout-s
 * are ignored: Tomcat keeps its accept-count 100 and its 60 s connection timeout). The JSON is
 * Json.MAPPER's, given to Spring as its JsonMapper bean (Boot's own backs off), so the body bytes
 * are every provider's. SpringApp.boot() is the start and stop of all three Spring apps.
 *
 * Build: make -C code rpc
 * Run:   cd code/java/rpc && $(../../tools/find-jdk)/bin/java -cp target/iom-rpc.jar:$(cat target/classpath.txt) \
 *            iom.rpc.spring.MvcProvider --port 8088 [--virtual-threads] [--work-ms 20] [--pool 200]
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
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.WebApplicationType;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;

public final class MvcProvider {
    private MvcProvider() {}

    // BEGIN mvc-routes
    @RestController
    public static class Routes {
        private final Provider provider;

        Routes(Provider provider) {
            this.provider = provider;
        }

        @PostMapping("/")
        public RpcResponse call(@RequestBody RpcRequest request) {
            return provider.invoke(checked(request));
        }

        @GetMapping("/")
        public RpcResponse findById(@RequestParam int id) {
            return provider.invoke(RpcRequest.findById(id));
        }
    }
    // END mvc-routes

    /** A call that names no service or method is a bad request (400), as Codec.readRequest says. */
    static RpcRequest checked(RpcRequest request) {
        if (request.service() == null || request.method() == null) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "a call names its service and method");
        }
        return request;
    }

    /** Tomcat as shipped but for --pool and --keep-alive-requests, if given. */
    static Map<String, Object> tomcat(RpcOptions opts) {
        Map<String, Object> p = new HashMap<>();
        if (opts.contract.pool > 0) {
            p.put("server.tomcat.threads.max", opts.contract.pool);
            p.put("server.tomcat.threads.min-spare", Math.min(10, opts.contract.pool));
        }
        if (opts.keepAliveRequests >= 0) {
            p.put("server.tomcat.max-keep-alive-requests", opts.keepAliveRequests > 0 ? opts.keepAliveRequests : -1);
        }
        return p;
    }

    public static void main(String[] args) {
        boolean virtual = Arrays.asList(args).contains("--virtual-threads");
        String[] rest = Arrays.stream(args).filter(a -> !a.equals("--virtual-threads")).toArray(String[]::new);
        RpcOptions opts = RpcOptions.parse(virtual ? "rpc-tomcat-vt" : "rpc-tomcat", rest);
        Map<String, Object> p = tomcat(opts);
        p.put("spring.threads.virtual.enabled", virtual);
        SpringApp.bootProvider(opts, Routes.class, WebApplicationType.SERVLET, p);
    }
}
