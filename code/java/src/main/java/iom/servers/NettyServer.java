/*
 * java-netty: Netty 4.2 on its NIO transport: a boss event loop accepts, worker event loops
 * (2 x cores) each run a Selector for their share of the connections, and a pipeline of
 * handlers turns bytes into responses.
 *
 * In the shape of Netty's own hello-world example: this bootstrap, an initializer that
 * builds each connection's pipeline (NettyInitializer), and the handler (NettyHandler),
 * which keeps the connection's request bytes, answers every complete request with write()
 * and flushes once per read. With --work-ms the work would block the event loop and every connection on it, so it is
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
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultEventExecutorGroup;
import io.netty.util.concurrent.EventExecutorGroup;
import iom.common.Options;
import iom.common.Server;
import java.net.InetSocketAddress;

public final class NettyServer {
    private NettyServer() {}

    static final int DEFAULT_POOL = 64;

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
                .childHandler(new NettyInitializer(opts, business));
        // END bootstrap
        Channel server;
        try {
            server = bootstrap.bind(address).sync().channel();
        } catch (Exception e) {
            throw Server.halt("bind " + opts.host + ":" + opts.port, e);
        }
        Server.stopOnSignal(server::close);
        Server.ready(((InetSocketAddress) server.localAddress()).getPort());
    }
}
