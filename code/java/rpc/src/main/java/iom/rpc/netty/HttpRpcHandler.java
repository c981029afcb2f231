/*
 * Part of rpc-netty (see NettyProvider): a connection's HTTP requests, each made a FullHttpRequest
 * by HttpServerCodec and HttpObjectAggregator (which answers a body over 64 KiB with 413 itself).
 *
 *   POST /       a call in --codec's bytes: 200, the answer in that codec (JSON or octet-stream)
 *   GET /?id=N   findById(N), N a whole number from 0, answered as JSON whatever the codec: the
 *                route of plain GETs (curl, wrk; the write-up's `wrk http://localhost:8088/?id=101`)
 *   another method on /: 405 with Allow: GET, POST; another path: 404; both keep the connection
 *   a bad call (body or id), or a request HttpServerCodec failed: 400, then the connection closes
 *
 * Keep-alive follows HttpUtil.isKeepAlive; --keep-alive-requests N closes after the Nth answer,
 * which says Connection: close, as Tomcat's maxKeepAliveRequests does. Flushes: NettyProvider.dispatch.
 * The flush per read, the FIN and a failed connection are RpcHandler's, as for FrameRpcHandler.
 */
package iom.rpc.netty;

import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.concurrent.EventExecutor;
import iom.rpc.Codec;
import iom.rpc.Provider;
import iom.rpc.RpcRequest;
import java.nio.charset.StandardCharsets;
import java.util.List;

// BEGIN handler
final class HttpRpcHandler extends RpcHandler<FullHttpRequest> {
    private final int keepAliveRequests; // > 0: close after that many; else never
    private int requests;
    private boolean closed; // an answer closed the connection: only where the answers run, one thread

    HttpRpcHandler(Codec codec, Provider provider, EventExecutor business, int keepAliveRequests) {
        super(codec, provider, business);
        this.keepAliveRequests = keepAliveRequests;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
        boolean failed = request.decoderResult().isFailure();
        boolean keepAlive = !failed && HttpUtil.isKeepAlive(request) && ++requests != keepAliveRequests;
        boolean http10 = !request.protocolVersion().isKeepAliveDefault();
        HttpMethod method = request.method();
        String uri = request.uri();
        byte[] body = ByteBufUtil.getBytes(request.content()); // the request is released on return
        dispatch(ctx, () -> {
            if (!closed) { // else a pipelined request after the answer that closed the connection
                send(ctx, failed ? text(HttpResponseStatus.BAD_REQUEST, "bad HTTP request") : answer(method, uri, body),
                        keepAlive, http10);
            }
        });
    }

    /** Writes one answer, saying whether the connection stays open; a 400 always closes it. */
    private void send(ChannelHandlerContext ctx, FullHttpResponse response, boolean keepAlive, boolean http10) {
        boolean open = keepAlive && response.status().code() != 400;
        closed = !open;
        if (!open || http10) {
            response.headers().set(HttpHeaderNames.CONNECTION, open ? HttpHeaderValues.KEEP_ALIVE : HttpHeaderValues.CLOSE);
        }
        if (open) {
            ctx.write(response); // flushed in channelReadComplete, or by dispatch on the executor
        } else {
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }

    /** The answer to one well-formed HTTP request; a bad call is a 400. */
    private FullHttpResponse answer(HttpMethod method, String uri, byte[] body) {
        QueryStringDecoder query = new QueryStringDecoder(uri);
        if (!query.path().equals("/")) {
            return text(HttpResponseStatus.NOT_FOUND, "no such path: the calls go to /");
        }
        try {
            if (method.equals(HttpMethod.POST)) {
                return ok(codec, codec.writeResponse(provider.invoke(codec.readRequest(body))));
            }
            if (method.equals(HttpMethod.GET)) {
                return ok(Codec.JSON, Codec.JSON.writeResponse(provider.invoke(RpcRequest.findById(id(query)))));
            }
        } catch (Codec.BadMessage e) {
            return text(HttpResponseStatus.BAD_REQUEST, e.getMessage());
        }
        FullHttpResponse r = text(HttpResponseStatus.METHOD_NOT_ALLOWED, "GET /?id=N or POST / with a call");
        r.headers().set(HttpHeaderNames.ALLOW, "GET, POST");
        return r;
    }

    private static int id(QueryStringDecoder query) {
        try {
            int id = Integer.parseInt(query.parameters().getOrDefault("id", List.of("")).get(0));
            if (id >= 0) {
                return id;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new Codec.BadMessage("GET /?id=N wants N a whole number from 0");
    }

    private static FullHttpResponse ok(Codec codec, byte[] bytes) {
        return response(HttpResponseStatus.OK, codec == Codec.JSON ? "application/json" : "application/octet-stream", bytes);
    }

    private static FullHttpResponse text(HttpResponseStatus status, String message) {
        return response(status, "text/plain; charset=utf-8", (message + "\n").getBytes(StandardCharsets.UTF_8));
    }

    private static FullHttpResponse response(HttpResponseStatus status, String type, byte[] bytes) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, Unpooled.wrappedBuffer(bytes));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, type).setInt(HttpHeaderNames.CONTENT_LENGTH, bytes.length);
        return r;
    }

    /** An empty write: flushes the answers written so far, and closes once they are sent. */
    @Override
    void closeAfterAnswers(ChannelHandlerContext ctx) {
        ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
    }
}
// END handler
