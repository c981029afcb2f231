/*
 * What the three Spring Boot apps share (rpc-tomcat and rpc-tomcat-vt: MvcProvider; rpc-webflux:
 * FluxProvider; rpc-consumer: Consumer): Boot's auto-configuration, the providers' Provider bean,
 * and boot(), the start and stop of each under the contract (run(), the same for the database
 * servers of iom.db). Each app names its own routes, a @RestController, to boot(); there is no
 * component scan.
 *
 * Chapter: book/java/rpc.md
 */
package iom.rpc.spring;

import iom.common.Options;
import iom.common.Server;
import iom.rpc.Json;
import iom.rpc.Profiling;
import iom.rpc.Provider;
import iom.rpc.RpcOptions;
import iom.rpc.UserServiceImpl;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

public final class SpringApp {
    private SpringApp() {}

    /** Spring Boot's auto-configuration: the web server of the app's type, Spring MVC or WebFlux. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class AutoConfig {}

    /** A provider's one bean besides its routes: the book's UserService, called through Provider. */
    @Configuration(proxyBeanMethods = false)
    static class ProviderBean {
        @Bean
        Provider provider(RpcOptions opts) {
            return Provider.of(new UserServiceImpl(opts.contract));
        }
    }

    /** Runs a provider: its routes and the Provider they call, as {@link #boot} does. */
    static void bootProvider(RpcOptions opts, Class<?> routes, WebApplicationType type,
            Map<String, Object> properties) {
        boot(opts, type, properties, ProviderBean.class, routes);
    }

    // BEGIN boot
    /**
     * Runs a Spring Boot app of these beans (no component scan; the options and Json.MAPPER are
     * beans too) under the contract: no banner, logging at WARN on stderr (logback.xml), READY once
     * listening, SIGTERM exits 0, a failed start exits 1 with "error:".
     */
    static void boot(RpcOptions opts, WebApplicationType type, Map<String, Object> properties, Class<?>... beans) {
        run(opts.id, opts.contract, opts, type, properties, beans);
        Profiling.schedule(opts);
    }

    /**
     * {@link #boot}'s start and stop for any app of the book (the RPC providers, the database
     * servers of iom.db): {@code options} is a bean of its own, its routes and other beans name
     * it in their constructors.
     */
    public static void run(String id, Options contract, Object options, WebApplicationType type,
            Map<String, Object> properties, Class<?>... beans) {
        Map<String, Object> p = new HashMap<>(properties);
        p.put("server.address", contract.host);
        p.put("server.port", contract.port);
        p.put("spring.main.banner-mode", "off");
        p.put("spring.main.log-startup-info", false);
        p.put("spring.main.register-shutdown-hook", false);
        p.put("logging.level.root", "WARN");
        // Spring MVC warns of every bad request it answers with a 400: no logging per request.
        p.put("logging.level.org.springframework.web.servlet.mvc.support.DefaultHandlerExceptionResolver", "ERROR");
        SpringApplication app = new SpringApplication(
                Stream.concat(Stream.of(AutoConfig.class), Stream.of(beans)).toArray(Class<?>[]::new));
        app.setWebApplicationType(type);
        app.setDefaultProperties(p);
        app.addInitializers(context -> {
            context.getBeanFactory().registerSingleton("options", options);
            context.getBeanFactory().registerSingleton("jsonMapper", Json.MAPPER);
        });
        ConfigurableApplicationContext context;
        try {
            context = app.run();
        } catch (RuntimeException e) {
            throw Server.halt("start " + id + " on " + contract.host + ":" + contract.port, e);
        }
        Server.stopOnSignal(context::close);
        Server.ready(((WebServerApplicationContext) context).getWebServer().getPort());
    }
    // END boot
}
