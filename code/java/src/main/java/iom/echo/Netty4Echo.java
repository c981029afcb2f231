/*
 * netty-4.2.20: the 2013 benchmark's echo server, set up the same way on today's Netty 4.2: a
 * boss event loop that accepts, --io-threads worker event loops (one Selector each), a read
 * counter on the worker's event loop, and the echo handler on a DefaultEventExecutorGroup of
 * --executor-threads (each channel gets one of its single-threaded executors, so its events stay
 * in order): Netty 4's counterpart of Netty 3's ExecutionHandler and Mina's ExecutorFilter.
 *
 * Netty 4 reads into pooled direct buffers of a guessed size (2048 at first; up after a read that
 * fills the guess, down after two small ones), up to 16 reads per read event, with no copy. The
 * read counter records each buffer's bytes and capacity (the guess it was allocated with).
 * Unlike Mina and Netty 3, Netty 4 turns TCP_NODELAY on by default.
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.echo.Netty4Echo --port 8080 [--stats reads.csv] [--nodelay true|false|default] \
 *            [--io-threads N] [--executor-threads N]
 * Try:   bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; head -c 5120 /dev/urandom >&3; head -c 5120 <&3 | wc -c'
 * Chapter: book/java/mina-netty.md (measured in book/java/mina-netty-results.md)
 */
package iom.echo;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultEventExecutorGroup;
import io.netty.util.concurrent.EventExecutorGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import iom.common.Server;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

public final class Netty4Echo {
    private Netty4Echo() {}

    // BEGIN handler
    /** One per channel, on its event loop, before the executor group: one call per buffer read. */
    static final class ReadCounter extends ChannelInboundHandlerAdapter {
        private final ReadStats stats;
        private final long conn;

        ReadCounter(ReadStats stats) {
            this.stats = stats;
            this.conn = stats.newConnection();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf in = (ByteBuf) msg;
            stats.record(conn, in.readableBytes(), in.capacity());
            ctx.fireChannelRead(msg);
        }
    }

    /** On the channel's executor: the buffer goes back as it came (Netty releases it once written). */
    static final class Echo extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.write(msg);
        }

        /**
         * Flush here, not per buffer (writeAndFlush): as in Netty's own echo example, write and
         * flush kept apart. One read event delivers one or more buffers (up to 16) and then this
         * call, in order on the same executor, so every echo still leaves at once, and all the
         * echoes of one read event go out in one flush (one gathering write) instead of one each.
         */
        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close(); // a reset peer, usually: this channel only
        }
    }
    // END handler

    public static void main(String[] args) {
        EchoOptions opts = EchoOptions.parse("netty4-echo", false, args);
        ReadStats stats = new ReadStats(ReadStats.version(Channel.class, "io.netty", "netty-transport"));
        InetSocketAddress address = opts.address();
        // BEGIN bootstrap
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(opts.ioThreads, NioIoHandler.newFactory());
        EventExecutorGroup executors = new DefaultEventExecutorGroup(opts.executorThreads);
        ChannelGroup channels = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(boss, workers)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    @SuppressWarnings("deprecation") // addLast(group, ...): deprecated in 4.2, and just what 2013 did
                    protected void initChannel(SocketChannel ch) {
                        channels.add(ch); // to close at shutdown; the group forgets closed channels
                        ch.pipeline().addLast(new ReadCounter(stats));
                        ch.pipeline().addLast(executors, new Echo());
                    }
                });
        if (opts.noDelay != null) {
            bootstrap.childOption(ChannelOption.TCP_NODELAY, opts.noDelay);
        }
        // END bootstrap
        Channel server;
        try {
            server = bootstrap.bind(address).sync().channel();
        } catch (Exception e) {
            throw Server.halt("bind " + opts.host + ":" + opts.port, e);
        }
        channels.add(server);
        Server.stopOnSignal(() -> channels.close().awaitUninterruptibly(),
                () -> shutdown(boss, workers, executors), () -> stats.save(opts.stats));
        Server.ready(((InetSocketAddress) server.localAddress()).getPort());
    }

    /** Stop the threads at once (no quiet period: everything is closed), waiting up to 5 s. */
    private static void shutdown(EventExecutorGroup... groups) {
        for (EventExecutorGroup g : groups) {
            g.shutdownGracefully(0, 5, TimeUnit.SECONDS);
        }
        for (EventExecutorGroup g : groups) {
            g.terminationFuture().awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }
}
