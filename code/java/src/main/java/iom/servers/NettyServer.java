/*
 * java-netty: Netty 4.2 on its NIO transport: a boss event loop accepts, worker event loops
 * (2 x cores) each run a Selector for their share of the connections, and a pipeline of
 * handlers turns bytes into responses.
 *
 * The handler keeps the connection's request bytes, answers every complete request with
 * write(), and flushes once per read (write and flush kept apart, as in Netty's examples).
 * With --work-ms the work would block the event loop and every connection on it, so it is
 * handed to a separate business EventExecutorGroup (--pool threads, default 64): each
 * connection gets one of its single-threaded executors, so its requests are worked on in
 * order, a batch of pipelined requests at a time, flushed once, and the writes go back to
 * the event loop (Netty does that for a write from any thread). Netty 4.2 deprecates
 * pipeline.addLast(group, handler), the old way to run a whole handler on such a group, in
 * favour of this explicit off-loading. --spin-us runs where the work runs. No logging
 * handler: nothing per request.
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.NettyServer --port 8080 [--work-ms 20 --pool 64]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/frameworks.md
 */
package iom.servers;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultEventExecutorGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.EventExecutorGroup;
import iom.common.Http;
import iom.common.Options;
import iom.common.RequestBuffer;
import iom.common.Server;
import iom.common.Work;
import java.net.InetSocketAddress;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

public final class NettyServer {
    private NettyServer() {}

    static final int DEFAULT_POOL = 64;

    /** The four responses, in direct buffers made once; each write sends a duplicate. */
    private static final Map<byte[], ByteBuf> RESPONSES = new IdentityHashMap<>();

    static {
        for (byte[] r : List.of(Http.RESPONSE_KEEP_ALIVE, Http.RESPONSE_CLOSE, Http.RESPONSE_400, Http.RESPONSE_431)) {
            RESPONSES.put(r, Unpooled.unreleasableBuffer(Unpooled.directBuffer(r.length).writeBytes(r)));
        }
    }

    // BEGIN handler
    /** One per connection: its request bytes in, responses out. */
    static final class HelloHandler extends ChannelInboundHandlerAdapter {
        private final Options opts;
        private final EventExecutor business; // null: the work runs on the event loop
        private final RequestBuffer requests = new RequestBuffer();
        private boolean closing;

        HelloHandler(Options opts, EventExecutor business) {
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

    public static void main(String[] args) {
        Options opts = Options.parse("java-netty", args);
        InetSocketAddress address = Server.address(opts);
        // BEGIN bootstrap
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(NioIoHandler.newFactory());
        EventExecutorGroup business = opts.workMs > 0 ? new DefaultEventExecutorGroup(opts.pool(DEFAULT_POOL)) : null;
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(boss, workers)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, opts.backlog)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true) // answer a request that ends with a FIN
                .childOption(ChannelOption.TCP_NODELAY, true) // Netty's default, made explicit: see Server.noDelay
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HelloHandler(opts, business == null ? null : business.next()));
                    }
                });
        // END bootstrap
        Channel server;
        try {
            server = bootstrap.bind(address).sync().channel();
        } catch (Exception e) {
            throw Server.fail("bind " + opts.host + ":" + opts.port, e);
        }
        Server.stopOnSignal(server::close);
        Server.ready(((InetSocketAddress) server.localAddress()).getPort());
    }
}
