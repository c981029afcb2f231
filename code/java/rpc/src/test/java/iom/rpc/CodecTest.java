package iom.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import iom.common.Options;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** A call and its answer survive both codecs; the provider answers it; bad bytes are refused. */
class CodecTest {
    private final Provider provider = Provider.of(new UserServiceImpl(new Options()));

    @ParameterizedTest
    @EnumSource(Codec.class)
    void roundTrip(Codec codec) {
        RpcRequest call = codec.readRequest(codec.writeRequest(RpcRequest.findById(101)));
        RpcResponse answer = codec.readResponse(codec.writeResponse(provider.invoke(call)));
        assertEquals(RpcResponse.ok(new User(101, "user-101")), answer);
    }

    @Test
    void theJsonOnTheWire() {
        assertEquals("{\"service\":\"iom.rpc.UserService\",\"method\":\"findById\",\"args\":[101]}",
                new String(Codec.JSON.writeRequest(RpcRequest.findById(101)), StandardCharsets.UTF_8));
        assertEquals("{\"status\":true,\"data\":{\"id\":101,\"name\":\"user-101\"},\"error\":null}",
                new String(Codec.JSON.writeResponse(provider.invoke(RpcRequest.findById(101))), StandardCharsets.UTF_8));
    }

    @Test
    void unknownMethodsAndBadArgumentsFailTheCallNotTheProvider() {
        assertFalse(provider.invoke(new RpcRequest("iom.rpc.UserService", "drop", java.util.List.of())).status());
        assertFalse(provider.invoke(new RpcRequest("iom.rpc.UserService", "findById", java.util.List.of("x"))).status());
    }

    @ParameterizedTest
    @EnumSource(Codec.class)
    void malformedBytesAreBadMessages(Codec codec) {
        assertThrows(Codec.BadMessage.class, () -> codec.readRequest("{\"service\":".getBytes(StandardCharsets.UTF_8)));
        assertThrows(Codec.BadMessage.class, () -> codec.readRequest(new byte[] {0, 5, 'a'}));
    }
}
