/*
 * Part of rpc-netty (see NettyProvider): the handler of a connection's frames (--transport frame),
 * what an RPC framework with its own protocol serves instead of HTTP. LengthFieldBasedFrameDecoder
 * hands it each message without its 4-byte length; it decodes the call with --codec, invokes it,
 * encodes the answer and writes it, and LengthFieldPrepender puts the length back in front.
 * There is no error frame: a message that is not a call (Codec.BadMessage) or a frame over 1 MiB
 * closes the connection, and only that one.
 *
 * Answers are written as they are made and flushed once per read on the event loop, or once per
 * answer on the business executor (NettyProvider.dispatch), which also keeps them in order.
 * The flush per read, the FIN and a failed connection are RpcHandler's, as for HttpRpcHandler.
 */
package iom.rpc.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.concurrent.EventExecutor;
import iom.rpc.Codec;
import iom.rpc.Provider;

// BEGIN handler
final class FrameRpcHandler extends RpcHandler<ByteBuf> {
    private ChannelFuture last; // the last answer's write; where the answers run, one thread
    private boolean closed; // a bad message closed the connection; the same

    FrameRpcHandler(Codec codec, Provider provider, EventExecutor business) {
        super(codec, provider, business);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
        byte[] call = ByteBufUtil.getBytes(frame); // the frame is released on return
        dispatch(ctx, () -> {
            if (closed) {
                return; // a frame after the bad one
            }
            try {
                last = ctx.write(Unpooled.wrappedBuffer(codec.writeResponse(provider.invoke(codec.readRequest(call)))));
            } catch (Codec.BadMessage e) { // no error frame
                closed = true;
                closeAfterAnswers(ctx);
            }
        });
    }

    /** Sends the answers written so far, then closes (an empty write would be an empty frame). */
    @Override
    void closeAfterAnswers(ChannelHandlerContext ctx) {
        ctx.flush();
        (last == null ? ctx.newSucceededFuture() : last).addListener(ChannelFutureListener.CLOSE);
    }
}
// END handler
