package iom.rpc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The provider side of the RPC framework, the same in every provider: a registry of services by
 * interface name, and invoke(), which finds the method a request names, converts its arguments
 * to the method's parameter types and calls it. Every provider decodes the request, hands it
 * here, and encodes what comes back; only how the bytes arrive and on which thread differs.
 * Methods are looked up once, at registration, by name and number of parameters.
 */
public final class Provider {
    private record Target(Object service, Method method) {}

    private final Map<String, Target> targets = new HashMap<>();

    /** A provider of the book's one service. */
    public static Provider of(UserService users) {
        return new Provider().register(UserService.class, users);
    }

    public <T> Provider register(Class<T> api, T service) {
        for (Method m : api.getMethods()) {
            if (!Modifier.isStatic(m.getModifiers())) {
                targets.put(key(api.getName(), m.getName(), m.getParameterCount()), new Target(service, m));
            }
        }
        return this;
    }

    private static String key(String service, String method, int arity) {
        return service + '#' + method + '/' + arity;
    }

    /** The answer to one call: its result, or a failed response that says what went wrong. */
    public RpcResponse invoke(RpcRequest request) {
        List<Object> args = request.args() == null ? List.of() : request.args();
        Target target = targets.get(key(request.service(), request.method(), args.size()));
        if (target == null) {
            return RpcResponse.failed("no method " + request.service() + "." + request.method()
                    + " with " + args.size() + " arguments");
        }
        Class<?>[] types = target.method().getParameterTypes();
        Object[] values = new Object[types.length];
        try {
            for (int i = 0; i < types.length; i++) {
                values[i] = Json.convert(args.get(i), types[i]);
            }
        } catch (RuntimeException e) {
            return RpcResponse.failed("bad arguments for " + request.method() + ": " + e.getMessage());
        }
        try {
            return RpcResponse.ok(target.method().invoke(target.service(), values));
        } catch (InvocationTargetException e) {
            return RpcResponse.failed(String.valueOf(e.getCause()));
        } catch (IllegalAccessException e) {
            return RpcResponse.failed(e.toString());
        }
    }
}
