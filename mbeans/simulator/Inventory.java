import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanInfo;

/** The captured broker's other kafka.* MBeans (inventory-4.4.tsv or -4.1.tsv, made by make_inventory.py). */
final class Inventory {
    static final class Shape {
        String className;
        String[] names, declared, runtime, descriptions;
        Map<String, Integer> index = new HashMap<>();
        MBeanInfo info;
        boolean isMeter;
    }

    static final class Row {
        String roles;
        boolean perTopic;
        char scope; // '-' at start, 'T' per topic, 'L' follower fetches served, 'F' per leader fetched from, 'P' per followed partition
        Shape shape;
        String template;
        String[] values;
        String domain, type, name;
    }

    final List<Shape> shapes = new ArrayList<>();
    final List<Row> rows = new ArrayList<>();

    static Inventory load(Path path, Set<String> healthKeys) throws IOException {
        Inventory inv = new Inventory();
        int lineNo = 0;
        for (String line : Files.readAllLines(path, StandardCharsets.UTF_8)) {
            lineNo++;
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] f = line.split("\t", -1);
            try {
                if (f[0].equals("S")) {
                    Shape s = new Shape();
                    s.className = f[2];
                    int n = f.length - 3;
                    s.names = new String[n];
                    s.declared = new String[n];
                    s.runtime = new String[n];
                    s.descriptions = new String[n];
                    for (int k = 0; k < n; k++) {
                        String[] a = f[3 + k].split("\\|", -1);
                        s.names[k] = a[0];
                        s.declared[k] = a[1];
                        s.runtime[k] = a[2];
                        s.descriptions[k] = a[3];
                        s.index.put(a[0], k);
                    }
                    s.info = Infos.build(s.className, s.names, s.declared, s.descriptions);
                    s.isMeter = s.className.endsWith("$Meter");
                    if (Integer.parseInt(f[1]) != inv.shapes.size()) throw new IllegalArgumentException("shape out of order");
                    inv.shapes.add(s);
                } else if (f[0].equals("M")) {
                    Row r = new Row();
                    r.roles = f[1];
                    r.scope = f[2].charAt(0);
                    if ("-TLFP".indexOf(r.scope) < 0 || f[2].length() != 1) throw new IllegalArgumentException("unknown scope " + f[2]);
                    r.perTopic = r.scope == 'T';
                    r.shape = inv.shapes.get(Integer.parseInt(f[3]));
                    r.template = f[4];
                    r.values = Arrays.copyOfRange(f, 5, f.length);
                    if (r.values.length != r.shape.names.length) throw new IllegalArgumentException("value count");
                    r.domain = r.template.substring(0, r.template.indexOf(':'));
                    r.type = key(r.template, "type");
                    r.name = key(r.template, "name");
                    if (healthKeys.contains(r.domain + ":" + r.type + ":" + r.name)
                            && !r.template.contains("topic=__cluster_metadata")) continue; // the model serves it
                    inv.rows.add(r);
                } else {
                    throw new IllegalArgumentException("unknown line kind " + f[0]);
                }
            } catch (RuntimeException e) {
                throw new UserError(path + ":" + lineNo + ": bad inventory line (" + e.getMessage()
                        + "); regenerate it with mbeans/simulator/make_inventory.py");
            }
        }
        return inv;
    }

    static String key(String template, String key) {
        String rest = template.substring(template.indexOf(':') + 1);
        for (String kv : rest.split(",")) {
            int eq = kv.indexOf('=');
            if (eq > 0 && kv.substring(0, eq).equals(key)) return kv.substring(eq + 1);
        }
        return null;
    }

    static Object convert(String runtime, String text, Model m, Node n) {
        text = text.replace("{version}", m.versionText).replace("{cluster_id}", m.clusterId)
                .replace("{start_ms}", Long.toString(m.clock.startEpochMs));
        if (text.startsWith("{raft_")) {
            boolean leads = n.id == m.activeController;
            text = text.replace("{raft_state}", leads ? "leader" : n.controller ? "follower" : "observer")
                    .replace("{raft_leader}", Integer.toString(m.activeController));
        }
        switch (runtime) {
            case "java.lang.Integer": return Integer.valueOf(text);
            case "java.lang.Long": return Long.valueOf(text);
            case "java.lang.Double": return Double.valueOf(text);
            case "java.lang.Byte": return Byte.valueOf(text);
            case "java.lang.Short": return Short.valueOf(text);
            case "java.lang.Boolean": return Boolean.valueOf(text);
            case "java.util.concurrent.TimeUnit": return TimeUnit.valueOf(text);
            default: return text;
        }
    }
}
