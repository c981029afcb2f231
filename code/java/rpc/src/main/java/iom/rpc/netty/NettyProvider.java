/*
 * rpc-netty: the RPC provider as source write-up 004's author wrote it by hand, on plain Netty 4.2
 * and its NIO transport: a boss event loop accepts, worker event loops (Netty's default, 2 x
 * cores) each run a Selector for their share of the connections, and each connection's pipeline
 * turns bytes into calls and answers into bytes. Two transports: --transport http (the default:
 * HttpServerCodec, HttpObjectAggregator of 64 KiB, HttpRpcHandler) and --transport frame (a
 * 4-byte length before each message, LengthFieldBasedFrameDecoder of 1 MiB at most,
 * LengthFieldPrepender, FrameRpcHandler); --codec json|binary picks the bytes of both.
 *
 * With no simulated work the call runs on the event loop. Blocking work (--work-ms) or CPU work
 * (--spin-us) would stall every connection of that event loop, so the call is handed to a
 * separate DefaultEventExecutorGroup of --pool threads, default 200: Tomcat's default thread pool,
 * so that in the comparison with Spring MVC on Tomcat the same number of threads can block. Each
 * connection is given one of its single-threaded executors, so its calls are answered in order,
 * and the answer is written from there (Netty moves the write to the event loop). No logging
 * handler: nothing per request. --idle-timeout-s is ignored: Netty never drops an idle connection.
 *
 * Build: make -C code rpc
 * Run:   cd code/java/rpc && $(../../tools/find-jdk)/bin/java -cp target/iom-rpc.jar:$(cat target/classpath.txt) \
 *            iom.rpc.netty.NettyProvider --port 8088 [--transport frame] [--codec binary] [--work-ms 20 --pool 200]
 * Try:   curl -s 'http://127.0.0.1:8088/?id=101'
 *        curl -s -d '{"service":"iom.rpc.UserService","method":"findById","args":[101]}' http://127.0.0.1:8088/
 * Chapter: book/java/rpc.md
 */
package iom.rpc.netty;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.concurrent.DefaultEventExecutorGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.EventExecutorGroup;
import iom.common.Options;
import iom.common.Server;
import iom.rpc.Profiling;
import iom.rpc.Provider;
import iom.rpc.RpcOptions;
import iom.rpc.UserServiceImpl;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

public final class NettyProvider {
    private NettyProvider() {}

    /** Tomcat's default maxThreads: as many threads able to block as Spring MVC has. */
    static final int DEFAULT_POOL = 200;

    public static void main(String[] args) {
        RpcOptions opts = RpcOptions.parse("rpc-netty", args);
        Options contract = opts.contract;
        InetSocketAddress address = Server.address(contract);
        Provider provider = Provider.of(new UserServiceImpl(contract));
        // BEGIN bootstrap
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(NioIoHandler.newFactory());
        EventExecutorGroup business = contract.workMs > 0 || contract.spinUs > 0
                ? new DefaultEventExecutorGroup(contract.pool(DEFAULT_POOL)) : null;
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(boss, workers)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, contract.backlog)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true) // answer a call that ends with a FIN
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        pipeline(ch.pipeline(), opts, provider, business == null ? null : business.next());
                    }
                });
        // END bootstrap
        Channel server;
        try {
            server = bootstrap.bind(address).sync().channel();
        } catch (Exception e) {
            throw Server.halt("bind " + contract.host + ":" + contract.port, e);
        }
        Server.stopOnSignal(server::close, () -> stop(boss), () -> stop(workers), () -> stop(business));
        Server.ready(((InetSocketAddress) server.localAddress()).getPort());
        Profiling.schedule(opts);
    }

    // BEGIN pipeline
    /** One connection's handlers: the transport's framing, then the call's handler. */
    static void pipeline(ChannelPipeline p, RpcOptions opts, Provider provider, EventExecutor business) {
        if (opts.transport.equals("frame")) {
            p.addLast(new LengthFieldBasedFrameDecoder(1 << 20, 0, 4, 0, 4));
            p.addLast(new LengthFieldPrepender(4));
            p.addLast(new FrameRpcHandler(opts.codec, provider, business));
        } else {
            p.addLast(new HttpServerCodec());
            p.addLast(new HttpObjectAggregator(64 << 10));
            p.addLast(new HttpRpcHandler(opts.codec, provider, business, opts.keepAliveRequests));
        }
    }
    // END pipeline

    // BEGIN dispatch
    /**
     * Runs one answer where the call belongs: on the event loop (no business executor; the
     * handler flushes once per read, in channelReadComplete), or on the connection's business
     * executor, after the calls before it, flushed there.
     */
    static void dispatch(ChannelHandlerContext ctx, EventExecutor business, Runnable answer) {
        if (business == null) {
            answer.run();
        } else {
            business.execute(() -> {
                answer.run();
                ctx.flush();
            });
        }
    }
    // END dispatch

    private static void stop(EventExecutorGroup group) {
        if (group != null) {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS);
        }
    }
}
