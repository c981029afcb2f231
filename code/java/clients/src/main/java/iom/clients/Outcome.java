package iom.clients;

import java.io.InterruptedIOException;
import java.net.http.HttpTimeoutException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeoutException;

/**
 * How a request ended, counted alike for every client: each library reports a timeout or a
 * refusal with exceptions of its own, and {@link #of} names them once, here. With a pool, a
 * timeout is {@link Pool#bound}'s TimeoutException; each library's own timeouts (the backstops,
 * and all there is as shipped) were seen here as: AHC TimeoutException ("Request timeout to ...
 * after 300 ms"); Apache SocketTimeoutException ("300000000 NANOSECONDS") for the response and
 * DeadlineTimeoutException (a TimeoutException) for the wait for a connection; the JDK
 * HttpTimeoutException; Jetty TimeoutException ("Total timeout 300 ms elapsed"); OkHttp
 * InterruptedIOException ("timeout"). Refusals: Jetty as shipped, past 64 connections and 1,024
 * queued, RejectedExecutionException ("Max requests queued per destination ..."); AHC's
 * TooManyConnectionsException only when its own connection cap is set (see AhcDriver).
 */
public enum Outcome {
    /** a 2xx response, body read. */
    OK,
    /** a response, not 2xx. */
    NON_2XX,
    /** no response within the timeout (waiting for a connection included). */
    TIMEOUT,
    /** refused by the client itself: a full queue, no connection allowed. */
    REJECTED,
    /** anything else: a reset, a refused connection, a protocol error. */
    ERROR;

    public static Outcome of(Driver.Response r) {
        return r.status() / 100 == 2 ? OK : NON_2XX;
    }

    public static Outcome of(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof CompletionException || c instanceof ExecutionException) {
                continue;
            }
            if (c instanceof TimeoutException || c instanceof HttpTimeoutException
                    || c instanceof java.net.SocketTimeoutException
                    || (c instanceof InterruptedIOException && String.valueOf(c.getMessage()).contains("timeout"))) {
                return TIMEOUT;
            }
            String name = c.getClass().getSimpleName();
            String message = String.valueOf(c.getMessage());
            if (c instanceof RejectedExecutionException || name.equals("TooManyConnectionsException")
                    || message.startsWith("Max requests queued")) {
                return REJECTED;
            }
            if (c instanceof CancellationException) {
                return TIMEOUT; // the drivers cancel a request only when its timeout fires
            }
        }
        return ERROR;
    }

    /** The exception's simple class name, under CompletableFuture's wrappers: what OpenLoad counts. */
    public static String kind(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t.getClass().getSimpleName();
    }
}
