/*
 * Part of java-netty (see NettyServer): what every accepted connection's pipeline holds.
 */
package iom.servers;

import io.netty.channel.ChannelInitializer;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.concurrent.EventExecutorGroup;
import iom.common.Options;

// BEGIN initializer
/** One NettyHandler per connection; with a business group, one of its executors too. */
final class NettyInitializer extends ChannelInitializer<SocketChannel> {
    private final Options opts;
    private final EventExecutorGroup business; // null: the work runs on the event loop

    NettyInitializer(Options opts, EventExecutorGroup business) {
        this.opts = opts;
        this.business = business;
    }

    @Override
    protected void initChannel(SocketChannel ch) {
        ch.pipeline().addLast(new NettyHandler(opts, business == null ? null : business.next()));
    }
}
// END initializer
