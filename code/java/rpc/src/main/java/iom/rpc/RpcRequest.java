package iom.rpc;

import java.util.List;

/**
 * One call: the service's interface name, the method's name and its arguments, as the
 * write-up's framework sent it ({"service":"iom.rpc.UserService","method":"findById","args":[101]}).
 */
public record RpcRequest(String service, String method, List<Object> args) {
    public static RpcRequest findById(int id) {
        return new RpcRequest(UserService.class.getName(), "findById", List.of(id));
    }
}
