import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A problem with the input or a request: reported as one line, never as a stack trace. */
final class UserError extends RuntimeException {
    UserError(String message) {
        super(message);
    }
}

/** Minimal JSON (objects keep key order; integers are Long). */
final class Json {
    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    static Object parse(String text) {
        Json p = new Json(text);
        p.ws();
        Object v = p.value();
        p.ws();
        if (p.i != p.s.length()) throw p.err("trailing characters");
        return v;
    }

    private UserError err(String what) {
        return new UserError("bad JSON at offset " + i + ": " + what);
    }

    private void ws() {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
    }

    private Object value() {
        if (i >= s.length()) throw err("unexpected end");
        char c = s.charAt(i);
        switch (c) {
            case '{': {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (peek('}')) return m;
                while (true) {
                    ws();
                    if (i >= s.length() || s.charAt(i) != '"') throw err("expected a key");
                    String k = string();
                    ws();
                    expect(':');
                    ws();
                    m.put(k, value());
                    ws();
                    if (peek('}')) return m;
                    expect(',');
                }
            }
            case '[': {
                i++;
                List<Object> l = new ArrayList<>();
                ws();
                if (peek(']')) return l;
                while (true) {
                    ws();
                    l.add(value());
                    ws();
                    if (peek(']')) return l;
                    expect(',');
                }
            }
            case '"':
                return string();
            case 't':
                lit("true");
                return Boolean.TRUE;
            case 'f':
                lit("false");
                return Boolean.FALSE;
            case 'n':
                lit("null");
                return null;
            default:
                return number();
        }
    }

    private boolean peek(char c) {
        if (i < s.length() && s.charAt(i) == c) {
            i++;
            return true;
        }
        return false;
    }

    private void expect(char c) {
        if (!peek(c)) throw err("expected '" + c + "'");
    }

    private void lit(String w) {
        if (!s.startsWith(w, i)) throw err("unexpected token");
        i += w.length();
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            if (i >= s.length()) throw err("unterminated string");
            char c = s.charAt(i++);
            if (c == '"') return b.toString();
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = s.charAt(i++);
            switch (e) {
                case 'n': b.append('\n'); break;
                case 't': b.append('\t'); break;
                case 'r': b.append('\r'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                default: b.append(e);
            }
        }
    }

    private Object number() {
        int start = i;
        while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
        String t = s.substring(start, i);
        if (t.isEmpty()) throw err("unexpected character '" + s.charAt(start) + "'");
        try {
            if (t.indexOf('.') < 0 && t.indexOf('e') < 0 && t.indexOf('E') < 0) return Long.parseLong(t);
            return Double.parseDouble(t);
        } catch (NumberFormatException e) {
            throw err("bad number " + t);
        }
    }

    static String write(Object o) {
        StringBuilder b = new StringBuilder();
        write(b, o);
        return b.toString();
    }

    @SuppressWarnings("unchecked")
    private static void write(StringBuilder b, Object o) {
        if (o == null) {
            b.append("null");
        } else if (o instanceof String) {
            b.append('"');
            String t = (String) o;
            for (int k = 0; k < t.length(); k++) {
                char c = t.charAt(k);
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            b.append('"');
        } else if (o instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : ((Map<String, Object>) o).entrySet()) {
                if (!first) b.append(',');
                first = false;
                write(b, e.getKey());
                b.append(':');
                write(b, e.getValue());
            }
            b.append('}');
        } else if (o instanceof Iterable) {
            b.append('[');
            boolean first = true;
            for (Object x : (Iterable<Object>) o) {
                if (!first) b.append(',');
                first = false;
                write(b, x);
            }
            b.append(']');
        } else if (o instanceof int[]) {
            b.append('[');
            int[] a = (int[]) o;
            for (int k = 0; k < a.length; k++) {
                if (k > 0) b.append(',');
                b.append(a[k]);
            }
            b.append(']');
        } else {
            b.append(o);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> obj(Object o, String what) {
        if (!(o instanceof Map)) throw new UserError(what + ": expected an object");
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object o, String what) {
        if (o == null) return Collections.emptyList();
        if (!(o instanceof List)) throw new UserError(what + ": expected a list");
        return (List<Object>) o;
    }

    static long l(Object o, String what) {
        if (o instanceof Long) return (Long) o;
        if (o instanceof Double && ((Double) o) == Math.rint((Double) o)) return ((Double) o).longValue();
        throw new UserError(what + ": expected an integer, got " + o);
    }

    static int i(Object o, String what) {
        long v = l(o, what);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) throw new UserError(what + ": out of range: " + v);
        return (int) v;
    }

    static double d(Object o, String what) {
        if (o instanceof Number) return ((Number) o).doubleValue();
        throw new UserError(what + ": expected a number, got " + o);
    }

    static String str(Object o, String what) {
        if (o instanceof String) return (String) o;
        throw new UserError(what + ": expected a string, got " + o);
    }

    static boolean bool(Object o, boolean dflt) {
        return o == null ? dflt : Boolean.TRUE.equals(o);
    }

    static int[] ints(Object o, String what) {
        List<Object> l = list(o, what);
        int[] a = new int[l.size()];
        for (int k = 0; k < a.length; k++) a[k] = i(l.get(k), what);
        return a;
    }
}
