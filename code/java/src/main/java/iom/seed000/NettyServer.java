/*
 * java-seed000-netty: the source write-up's Netty server AS PUBLISHED (seed 000,
 * ../shared/seeds/000_*.txt), kept to reproduce its numbers; not a book server.
 * Three classes, as in the write-up: NettyServer (bootstrap), NettyServerChannelHandler
 * (initializer), NettyServerHandler (the handler).
 *
 * What it does, faithfully: a boss group of 3 and a worker group of 100 NIO event loops,
 * SO_BACKLOG 1024 and SO_RCVBUF 3 KiB; the handler answers every *read* (not every
 * request: it never parses), sleeping 20 ms on the event loop first, and prints the
 * request and the response to stdout each time; it never closes the connection. With 100
 * event loops and 40 connections each connection mostly has a loop of its own, so the
 * sleep rarely delays another connection: that, not "Netty", is why it reached 1648 req/s,
 * close to the 2000 req/s that 40 connections x 20 ms allow.
 *
 * Port to Netty 4.2, minimal: the write-up's code is Netty 4.x API and compiles unchanged;
 * NioEventLoopGroup is deprecated in 4.2 (in favour of MultiThreadIoEventLoopGroup with
 * NioIoHandler) but still works, so it is kept, with the deprecation warning suppressed.
 * Changes are marked "added:" (see Harness): main, --port, --work-ms, READY, exit 0 on
 * SIGTERM. The corrected server is java-netty (iom.servers.NettyServer).
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.seed000.NettyServer --port 9005
 * Chapter: book/java/reproduce-000.md
 */
package iom.seed000;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;

// BEGIN netty-server
public class NettyServer {
    @SuppressWarnings("deprecation") // added: NioEventLoopGroup is deprecated in Netty 4.2
    public void bind(int port) throws InterruptedException {
        EventLoopGroup bossGroup = new NioEventLoopGroup(3);
        EventLoopGroup workerGroup = new NioEventLoopGroup(100);
        try {
            ServerBootstrap b = new ServerBootstrap();
            b.channel(NioServerSocketChannel.class)
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .option(ChannelOption.SO_RCVBUF, 3 * 1024);

            b.group(bossGroup, workerGroup).childHandler(new NettyServerChannelHandler());
            ChannelFuture channelFuture = b.bind(Harness.LOOPBACK, port).sync(); // added: loopback only (was b.bind(port))
            Harness.ready(channelFuture.channel().localAddress()); // added: READY port=N
            channelFuture.channel().closeFuture().sync();
        } finally {
            bossGroup.shutdownGracefully();
            workerGroup.shutdownGracefully();
        }
    }
// END netty-server

    public static void main(String[] args) throws InterruptedException { // added: the write-up's 启动程序
        Harness.parse(args);
        new NettyServer().bind(Harness.port); // was: new NettyServer().bind(9005)
    }
}
