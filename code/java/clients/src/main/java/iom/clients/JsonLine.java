package iom.clients;

import java.math.BigDecimal;
import java.util.Map;

/** A compact JSON text of a map: strings, numbers, booleans, null and nested maps (no library). */
final class JsonLine {
    private JsonLine() {}

    static String of(Map<String, ?> map) {
        StringBuilder out = new StringBuilder();
        write(out, map);
        return out.toString();
    }

    private static void write(StringBuilder out, Object v) {
        switch (v) {
            case null -> out.append("null");
            case Boolean b -> out.append(b);
            case Double d when !Double.isFinite(d) -> out.append("null");
            case Double d -> out.append(BigDecimal.valueOf(d).stripTrailingZeros().toPlainString());
            case Number n -> out.append(n.longValue());
            case Map<?, ?> m -> {
                out.append('{');
                String comma = "";
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    out.append(comma);
                    string(out, String.valueOf(e.getKey()));
                    out.append(':');
                    write(out, e.getValue());
                    comma = ",";
                }
                out.append('}');
            }
            default -> string(out, v.toString());
        }
    }

    private static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> out.append(c < 0x20 ? String.format("\\u%04x", (int) c) : String.valueOf(c));
            }
        }
        out.append('"');
    }
}
