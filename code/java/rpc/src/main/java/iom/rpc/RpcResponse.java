package iom.rpc;

/** One answer: status true with the method's result as data, or false with the error's message. */
public record RpcResponse(boolean status, Object data, String error) {
    public static RpcResponse ok(Object data) {
        return new RpcResponse(true, data, null);
    }

    public static RpcResponse failed(String error) {
        return new RpcResponse(false, null, error);
    }
}
