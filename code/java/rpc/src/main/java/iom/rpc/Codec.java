package iom.rpc;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.JacksonException;

/**
 * How a call and its answer become bytes: JSON (Jackson, what an HTTP RPC framework sends) or a
 * compact binary form (what a framework with its own codec sends: lengths and tags, no names
 * of fields). A malformed message throws {@link BadMessage}: the provider answers it with a
 * client error (400 over HTTP) or closes the connection (frames), never crashes.
 */
public enum Codec {
    JSON {
        @Override
        public RpcRequest readRequest(byte[] bytes) {
            try {
                return check(Json.MAPPER.readValue(bytes, RpcRequest.class));
            } catch (JacksonException e) {
                throw new BadMessage("not a JSON call: " + e.getOriginalMessage());
            }
        }

        @Override
        public byte[] writeRequest(RpcRequest request) {
            return Json.MAPPER.writeValueAsBytes(request);
        }

        @Override
        public byte[] writeResponse(RpcResponse response) {
            return Json.MAPPER.writeValueAsBytes(response);
        }

        @Override
        public RpcResponse readResponse(byte[] bytes) {
            RpcResponse r = Json.MAPPER.readValue(bytes, RpcResponse.class);
            return r.data() == null ? r : new RpcResponse(r.status(), Json.convert(r.data(), User.class), r.error());
        }
    },

    /**
     * A call: service and method as modified UTF-8 (DataOutput.writeUTF), the number of
     * arguments, each a tag ('I' int, 'S' string) and its value. An answer: a status byte, then
     * on success the result's tag ('U' user: id and name, 'I', 'S', 'N' null) and value, on
     * failure the error's message.
     */
    BINARY {
        @Override
        public RpcRequest readRequest(byte[] bytes) {
            try {
                DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(bytes));
                String service = in.readUTF();
                String method = in.readUTF();
                int n = in.readUnsignedByte();
                List<Object> args = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    args.add(readValue(in));
                }
                if (in.available() != 0) {
                    throw new BadMessage("bytes after the call's arguments");
                }
                return check(new RpcRequest(service, method, args));
            } catch (IOException e) {
                throw new BadMessage("truncated binary call");
            }
        }

        @Override
        public byte[] writeRequest(RpcRequest request) {
            return write(out -> {
                out.writeUTF(request.service());
                out.writeUTF(request.method());
                out.writeByte(request.args().size());
                for (Object a : request.args()) {
                    writeValue(out, a);
                }
            });
        }

        @Override
        public byte[] writeResponse(RpcResponse response) {
            return write(out -> {
                out.writeBoolean(response.status());
                if (response.status()) {
                    writeValue(out, response.data());
                } else {
                    out.writeUTF(response.error());
                }
            });
        }

        @Override
        public RpcResponse readResponse(byte[] bytes) {
            try {
                DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(bytes));
                return in.readBoolean() ? RpcResponse.ok(readValue(in)) : RpcResponse.failed(in.readUTF());
            } catch (IOException e) {
                throw new BadMessage("truncated binary answer");
            }
        }
    };

    public abstract RpcRequest readRequest(byte[] bytes);

    public abstract byte[] writeRequest(RpcRequest request);

    public abstract byte[] writeResponse(RpcResponse response);

    public abstract RpcResponse readResponse(byte[] bytes);

    /** The codec of a --codec flag's value: json or binary. */
    public static Codec named(String name) {
        return switch (name) {
            case "json" -> JSON;
            case "binary" -> BINARY;
            default -> throw new IllegalArgumentException("--codec wants json or binary, not '" + name + "'");
        };
    }

    /** A message that is not a call (or an answer) of this codec. */
    public static final class BadMessage extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public BadMessage(String message) {
            super(message);
        }
    }

    private static RpcRequest check(RpcRequest r) {
        if (r == null || r.service() == null || r.method() == null) {
            throw new BadMessage("a call names its service and method");
        }
        return r;
    }

    private interface Writer {
        void write(DataOutputStream out) throws IOException;
    }

    private static byte[] write(Writer w) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            w.write(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        return bytes.toByteArray();
    }

    private static void writeValue(DataOutputStream out, Object v) throws IOException {
        if (v == null) {
            out.writeByte('N');
        } else if (v instanceof User u) {
            out.writeByte('U');
            out.writeInt(u.id());
            out.writeUTF(u.name());
        } else if (v instanceof Integer i) {
            out.writeByte('I');
            out.writeInt(i);
        } else if (v instanceof String s) {
            out.writeByte('S');
            out.writeUTF(s);
        } else {
            throw new IllegalArgumentException("the binary codec has no tag for " + v.getClass().getName());
        }
    }

    private static Object readValue(DataInputStream in) throws IOException {
        int tag = in.readUnsignedByte();
        return switch (tag) {
            case 'N' -> null;
            case 'U' -> new User(in.readInt(), in.readUTF());
            case 'I' -> in.readInt();
            case 'S' -> in.readUTF();
            default -> throw new BadMessage("unknown tag " + tag + " in a binary message");
        };
    }
}
