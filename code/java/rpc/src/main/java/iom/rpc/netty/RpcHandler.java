/*
 * Part of rpc-netty (see NettyProvider): what its two handlers of a connection share, HttpRpcHandler
 * (--transport http) and FrameRpcHandler (--transport frame): the codec and provider of the calls,
 * where the answers run (dispatch), one flush per read on the event loop, the peer's FIN answered
 * by closing once the answers so far are sent, and a failed connection closed, that one only.
 */
package iom.rpc.netty;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.util.concurrent.EventExecutor;
import iom.rpc.Codec;
import iom.rpc.Provider;

abstract class RpcHandler<I> extends SimpleChannelInboundHandler<I> {
    final Codec codec;
    final Provider provider;
    private final EventExecutor business; // null: the call runs on the event loop

    RpcHandler(Codec codec, Provider provider, EventExecutor business) {
        this.codec = codec;
        this.provider = provider;
        this.business = business;
    }

    /** Runs one answer where the calls run: see NettyProvider.dispatch. */
    final void dispatch(ChannelHandlerContext ctx, Runnable answer) {
        NettyProvider.dispatch(ctx, business, answer);
    }

    /** Sends the answers written so far, then closes the connection. */
    abstract void closeAfterAnswers(ChannelHandlerContext ctx);

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        ctx.flush(); // on the event loop: one flush for everything this read answered
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
        if (event instanceof ChannelInputShutdownEvent) { // the peer's FIN: answer what came, then close
            dispatch(ctx, () -> closeAfterAnswers(ctx));
        }
        ctx.fireUserEventTriggered(event);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close(); // a reset peer, or a frame over 1 MiB (--transport frame): this connection only
    }
}
