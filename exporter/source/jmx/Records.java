package sidecar.jmx;

import java.io.IOException;
import java.math.BigInteger;
import java.util.Date;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import javax.management.openmbean.TabularData;

import static sidecar.jmx.SidecarJmx.*;

/** The records' text (the format at the top of SidecarJmx.java): values, statuses and the separators kept out. */
final class Records {
    private Records() {}

    static String clean(String s) {
        if (s == null) return "";
        StringBuilder sb = null;
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == RS || ch == US || ch == '\u001c' || ch == '\u001d' || ch == '\u0000') {
                if (sb == null) sb = new StringBuilder(s.substring(0, i));
                sb.append(' ');
            } else if (sb != null) {
                sb.append(ch);
            }
        }
        return sb == null ? s : sb.toString();
    }

    static boolean hasSeparator(String s) {
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == RS || ch == US || ch == '\u001c' || ch == '\u001d' || ch == '\u0000') return true;
        }
        return false;
    }

    static void status(StringBuilder sb, Exception e) {
        if (e instanceof InstanceNotFoundException) sb.append('g');
        else sb.append('e').append(clean(e.getClass().getName() + ": " + e.getMessage()));
    }

    /** A listed name's text as an ObjectName again (it parsed when listed, so it parses now). */
    static ObjectName objectName(String text) {
        try {
            return new ObjectName(text);
        } catch (javax.management.MalformedObjectNameException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A value the server could not send or we cannot receive (not Serializable, a class this
     *  JVM lacks): a property of the attribute, not a broken connection. */
    static boolean untransferable(Throwable e) {
        for (int depth = 0; e != null && depth < 10; depth++, e = e.getCause()) {
            if (e instanceof java.io.NotSerializableException || e instanceof java.io.WriteAbortedException
                    || e instanceof ClassNotFoundException || e instanceof java.io.InvalidClassException) {
                return true;
            }
        }
        return false;
    }

    static String rootMessage(Throwable e) {
        Throwable r = e;
        for (int depth = 0; r.getCause() != null && depth < 10; depth++) r = r.getCause();
        return r.getClass().getName() + ": " + r.getMessage();
    }

    static int oneByOne(MBeanServerConnection conn, ObjectName name, String[] want, StringBuilder sb,
                        List<Object> complex) throws IOException {
        int start = sb.length();
        int calls = 0;
        sb.append('o');
        for (String a : want) {
            sb.append(US);
            calls++;
            try {
                encode(sb, conn.getAttribute(name, a), complex);
            } catch (InstanceNotFoundException e) {
                sb.setLength(start);
                sb.append('g');
                return calls;
            } catch (IOException e) {
                if (!untransferable(e)) throw e;
                sb.append('u').append(clean("not transferable: " + rootMessage(e)));
            } catch (Exception e) {
                sb.append('-');
            }
        }
        return calls;
    }

    /** The same order of type tests as jmx_exporter's JmxScraper.processBeanValue. */
    static void encode(StringBuilder sb, Object v, List<Object> complex) {
        if (v == null) {
            sb.append('n');
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte
                || v instanceof BigInteger || v instanceof AtomicInteger || v instanceof AtomicLong) {
            sb.append('i').append(v.toString());
        } else if (v instanceof Double) {
            sb.append('d').append(Double.toString((Double) v));
        } else if (v instanceof Float) {
            // the float's own digits are printed on the Python side (Float.toString of JDK 19+)
            sb.append('f').append(Double.toString(((Float) v).doubleValue()));
        } else if (v instanceof Number) {
            // BigDecimal and the like: rules see toString() (`1.10`, `1E+3`), samples doubleValue()
            String text = v.toString();
            if (hasSeparator(text)) complexRef(sb, v, complex);
            else sb.append('N').append(Double.toString(((Number) v).doubleValue())).append(' ').append(text);
        } else if (v instanceof Boolean) {
            sb.append(((Boolean) v) ? 'T' : 'F');
        } else if (v instanceof String) {
            String s = (String) v;
            if (hasSeparator(s)) complexRef(sb, s, complex);
            else sb.append('s').append(s);
        } else if (v instanceof Date) {
            sb.append('t').append(((Date) v).getTime());
        } else if (v instanceof CompositeData || v instanceof TabularData) {
            complexRef(sb, v, complex);
        } else if (v.getClass().isArray()) {
            sb.append('a');
        } else if (v instanceof Optional) {
            Optional<?> o = (Optional<?>) v;
            encode(sb, o.isPresent() ? o.get() : null, complex);
        } else if (v.getClass().isEnum()) {  // as jmx_exporter tests it: not a constant with a body
            String s = v.toString();
            if (hasSeparator(s)) complexRef(sb, s, complex);
            else sb.append('e').append(s);
        } else {
            sb.append('u').append(clean(v.getClass().getName()));
        }
    }

    static void complexRef(StringBuilder sb, Object v, List<Object> complex) {
        // a placeholder index local to the worker; run() rewrites it to the shared index
        sb.append('x').append('\u0000').append(complex.size()).append('\u0000');
        complex.add(v);
    }
}
