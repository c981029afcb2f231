/*
 * Part of java-seed000-netty, AS PUBLISHED in the source write-up: see NettyServer.
 * Chapter: book/java/reproduce-000.md
 */
package iom.seed000;

import io.netty.channel.ChannelInitializer;
import io.netty.channel.socket.SocketChannel;

// BEGIN channel-handler
public class NettyServerChannelHandler extends ChannelInitializer<SocketChannel> {

    @Override
    protected void initChannel(SocketChannel socketChannel) throws Exception {
        socketChannel.pipeline().addLast(new NettyServerHandler());
    }
}
// END channel-handler
