// A Java page's claims, checked against what its cells count (the Java kernel's counterpart of
// code/iobench/book/claims.py): a comparative or universal sentence of the prose is checked by the
// cell that counts its numbers, and while the condition holds, nothing happens; when it fails, the
// cell throws an IllegalStateException naming the sentence and its evidence, and the page's
// execution (and the book's build) stops on it.
//
// In a Java page, after IoBench.java:   %load ../../code/java/tools/Claim.java
//   Claim.claim(received == expected, "every request the client had sent was answered",
//               "received", received, "expected", expected);
// Use it only for behaviour a cell counts (requests answered, bytes received), never for a rate
// or a time measured live: those move with the host.
public final class Claim {
    private Claim() {}

    /** Nothing if `holds`; otherwise an IllegalStateException naming `sentence` and its evidence
     *  (name, value, name, value, ...). */
    public static void claim(boolean holds, String sentence, Object... evidence) {
        if (holds) {
            return;
        }
        StringBuilder shown = new StringBuilder();
        for (int i = 0; i < evidence.length; i += 2) {
            if (shown.length() > 0) {
                shown.append(", ");
            }
            if (i + 1 < evidence.length) {
                shown.append(evidence[i]).append('=').append(brief(evidence[i + 1]));
            } else {
                shown.append(brief(evidence[i]));
            }
        }
        throw new IllegalStateException("the data no longer support: '" + sentence + "'"
                + (shown.length() > 0 ? " (" + shown + ")" : ""));
    }

    private static String brief(Object v) {
        if (v instanceof Double || v instanceof Float) {
            return String.format("%.4g", ((Number) v).doubleValue());
        }
        String text = String.valueOf(v);
        return text.length() <= 120 ? text : text.substring(0, 117) + "...";
    }
}
