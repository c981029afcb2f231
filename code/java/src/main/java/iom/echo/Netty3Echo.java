/*
 * netty-3.6.2: the echo server of the 2013 Mina vs Netty benchmark, on Netty 3.6.2.Final
 * (org.jboss.netty): a NioServerSocketChannelFactory with one boss thread that accepts and a
 * NioWorkerPool of --io-threads workers (one Selector each), then a pipeline of a read counter,
 * an ExecutionHandler whose OrderedMemoryAwareThreadPoolExecutor of --executor-threads runs the
 * rest (a channel's events stay in order; 0, 0: no memory limits), and a handler that writes
 * every buffer it receives straight back.
 *
 * Netty 3 reads into one direct buffer per worker, at least as large as the channel's predicted
 * size, and copies exactly the bytes read into a new heap buffer; the prediction adapts (up four
 * steps after a read that fills it, down one after two small reads in a row). The read counter,
 * on the worker thread, records each event's bytes and the prediction for the NEXT read, which
 * Netty has already updated with this one when the event arrives (the buffer read into is not
 * visible to a handler).
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.echo.Netty3Echo --port 8080 [--stats reads.csv] [--nodelay true|false|default] \
 *            [--io-threads N] [--executor-threads N]
 * Try:   bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; head -c 5120 /dev/urandom >&3; head -c 5120 <&3 | wc -c'
 * Chapter: book/java/mina-netty.md (measured in book/java/mina-netty-results.md)
 */
package iom.echo;

import iom.common.Server;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;
import org.jboss.netty.bootstrap.ServerBootstrap;
import org.jboss.netty.buffer.ChannelBuffer;
import org.jboss.netty.channel.Channel;
import org.jboss.netty.channel.ChannelException;
import org.jboss.netty.channel.ChannelHandlerContext;
import org.jboss.netty.channel.ChannelStateEvent;
import org.jboss.netty.channel.Channels;
import org.jboss.netty.channel.ExceptionEvent;
import org.jboss.netty.channel.MessageEvent;
import org.jboss.netty.channel.SimpleChannelUpstreamHandler;
import org.jboss.netty.channel.group.ChannelGroup;
import org.jboss.netty.channel.group.DefaultChannelGroup;
import org.jboss.netty.channel.socket.nio.NioServerSocketChannelFactory;
import org.jboss.netty.channel.socket.nio.NioSocketChannelConfig;
import org.jboss.netty.channel.socket.nio.NioWorkerPool;
import org.jboss.netty.handler.execution.ExecutionHandler;
import org.jboss.netty.handler.execution.OrderedMemoryAwareThreadPoolExecutor;

public final class Netty3Echo {
    private Netty3Echo() {}

    // BEGIN handler
    /** One per channel, on its worker thread, before the ExecutionHandler: one call per read event. */
    static final class ReadCounter extends SimpleChannelUpstreamHandler {
        private final ReadStats stats;
        private final ChannelGroup channels;
        private final long conn;

        ReadCounter(ReadStats stats, ChannelGroup channels) {
            this.stats = stats;
            this.channels = channels;
            this.conn = stats.newConnection();
        }

        @Override
        public void channelOpen(ChannelHandlerContext ctx, ChannelStateEvent e) {
            channels.add(e.getChannel()); // to close at shutdown; the group forgets closed channels
            ctx.sendUpstream(e);
        }

        @Override
        public void messageReceived(ChannelHandlerContext ctx, MessageEvent e) {
            ChannelBuffer in = (ChannelBuffer) e.getMessage();
            NioSocketChannelConfig config = (NioSocketChannelConfig) e.getChannel().getConfig();
            stats.record(conn, in.readableBytes(), config.getReceiveBufferSizePredictor().nextReceiveBufferSize());
            ctx.sendUpstream(e);
        }
    }

    /** On an executor thread: the buffer goes back as it came. */
    static final class Echo extends SimpleChannelUpstreamHandler {
        @Override
        public void messageReceived(ChannelHandlerContext ctx, MessageEvent e) {
            e.getChannel().write(e.getMessage());
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, ExceptionEvent e) {
            e.getChannel().close(); // a reset peer, usually: this channel only
        }
    }
    // END handler

    public static void main(String[] args) {
        EchoOptions opts = EchoOptions.parse("netty3-echo", false, args);
        ReadStats stats = new ReadStats(ReadStats.version(Channel.class, "io.netty", "netty"));
        ChannelGroup channels = new DefaultChannelGroup("echo");
        // BEGIN bootstrap
        ServerBootstrap bootstrap = new ServerBootstrap(new NioServerSocketChannelFactory(
                Executors.newCachedThreadPool(), new NioWorkerPool(Executors.newCachedThreadPool(), opts.ioThreads)));
        ExecutionHandler executor = new ExecutionHandler(
                new OrderedMemoryAwareThreadPoolExecutor(opts.executorThreads, 0, 0));
        Echo echo = new Echo();
        bootstrap.setPipelineFactory(() -> Channels.pipeline(new ReadCounter(stats, channels), executor, echo));
        bootstrap.setOption("reuseAddress", true);
        if (opts.noDelay != null) {
            bootstrap.setOption("child.tcpNoDelay", opts.noDelay);
        }
        // END bootstrap
        Channel server;
        try {
            server = bootstrap.bind(opts.address());
        } catch (ChannelException e) {
            throw Server.halt("bind " + opts.host + ":" + opts.port, e);
        }
        channels.add(server);
        Server.stopOnSignal(() -> channels.close().awaitUninterruptibly(), bootstrap::releaseExternalResources,
                executor::releaseExternalResources, () -> stats.save(opts.stats));
        Server.ready(((InetSocketAddress) server.getLocalAddress()).getPort());
    }
}
