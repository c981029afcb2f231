/*
 * Part of java-netty (see NettyServer): the handler each connection's pipeline ends with.
 *
 * It keeps the connection's request bytes, answers every complete request with write(),
 * and flushes once per read (write and flush kept apart, as in Netty's examples). With a
 * business executor (--work-ms), the work of a batch runs there, in order, and the writes
 * go back to the event loop (Netty does that for a write from any thread).
 */
package iom.servers;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.util.concurrent.EventExecutor;
import iom.common.Http;
import iom.common.Options;
import iom.common.RequestBuffer;
import iom.common.Work;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

// BEGIN handler
/** One per connection: its request bytes in, responses out. */
final class NettyHandler extends ChannelInboundHandlerAdapter {
    /** The four responses, in direct buffers made once; each write sends a duplicate. */
    private static final Map<byte[], ByteBuf> RESPONSES = new IdentityHashMap<>();

    static {
        for (byte[] r : List.of(Http.RESPONSE_KEEP_ALIVE, Http.RESPONSE_CLOSE, Http.RESPONSE_400, Http.RESPONSE_431)) {
            RESPONSES.put(r, Unpooled.unreleasableBuffer(Unpooled.directBuffer(r.length).writeBytes(r)));
        }
    }

    private final Options opts;
    private final EventExecutor business; // null: the work runs on the event loop
    private final RequestBuffer requests = new RequestBuffer();
    private boolean closing;

    NettyHandler(Options opts, EventExecutor business) {
        this.opts = opts;
        this.business = business;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf in = (ByteBuf) msg;
        try {
            while (!closing && in.isReadable()) {
                in.skipBytes(requests.put(in.nioBuffer()));
                int[] batch = requests.batch(); // every complete request held
                if (batch.length == 0) {
                    continue;
                }
                closing = Http.closeAfter(batch[batch.length - 1]);
                if (business == null) { // on the event loop: write now, flush once per read
                    answer(ctx, batch);
                } else { // on this connection's business thread, in order; one flush per batch
                    business.execute(() -> {
                        answer(ctx, batch);
                        ctx.flush();
                    });
                }
            }
        } finally {
            in.release();
        }
    }

    /** Each request's work and response, in order; then the close, if the last one asks for it. */
    private void answer(ChannelHandlerContext ctx, int[] batch) {
        for (int parsed : batch) {
            simulate(parsed);
            ctx.write(RESPONSES.get(Http.response(parsed)).duplicate());
        }
        if (Http.closeAfter(batch[batch.length - 1])) {
            ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }
    }

    private void simulate(int parsed) {
        if (parsed > 0) {
            try {
                Work.simulate(opts);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // only on shutdown: answer anyway
            }
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        ctx.flush(); // one flush, one write(2), for everything this read produced
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
        if (event instanceof ChannelInputShutdownEvent) { // the peer's FIN: answer what came, then close
            Runnable close = () -> ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            if (business == null) {
                close.run();
            } else {
                business.execute(close); // after the responses still being worked on
            }
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close(); // a reset peer, usually: this connection only
    }
}
// END handler
