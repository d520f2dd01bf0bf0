import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs one Kafka command-line class several times in one JVM, as if run once per argument group:
 * a JVM start (seconds on a busy machine) is paid once instead of once per run.
 *
 *   java -cp ...:kafka-libs/* ToolRuns kafka.admin.TopicCommand --describe ... -- --describe ... --under-replicated-partitions
 *
 * Groups are separated by "--". Before each run it prints "@@run N" and after it "@@exit CODE" on
 * stdout, the stream the tools print to (Scala's Console.out is this same PrintStream, so lines
 * stay in order). Kafka's tools end with org.apache.kafka.common.utils.Exit.exit (0.11 and later),
 * which is made to throw here instead of ending the JVM; the tool's own code runs unchanged. The
 * first exit of a run is its exit code (4.x calls Exit.exit inside a try whose catch exits again).
 *
 *   java -cp ...:kafka-libs/* ToolRuns --serve kafka.admin.TopicCommand
 *
 * reads one run per line of stdin instead, its arguments separated by tabs, and prints "@@exit CODE"
 * after each, until stdin ends: a cluster's --describe, asked every few seconds while a test waits
 * for the cluster to settle, costs a run instead of a JVM start.
 */
public final class ToolRuns {
    private static final class Exited extends RuntimeException {
        Exited() {
            super("exit (ToolRuns)", null, false, false);
        }
    }

    private static Integer firstExit;

    /** Kafka's Exit: org.apache.kafka.common.utils until 4.3, utils.internals from 4.4. */
    private static Class<?> exitClass() throws ClassNotFoundException {
        try {
            return Class.forName("org.apache.kafka.common.utils.Exit");
        } catch (ClassNotFoundException e) {
            return Class.forName("org.apache.kafka.common.utils.internals.Exit");
        }
    }

    public static void main(String[] args) throws Exception {
        Class<?> exit = exitClass();
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
        Object thrower = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure},
            (proxy, method, a) -> {
                if (method.getName().equals("execute")) {
                    if (firstExit == null) firstExit = (Integer) a[0];
                    throw new Exited();
                }
                if (method.getName().equals("hashCode")) return System.identityHashCode(proxy);
                if (method.getName().equals("equals")) return proxy == a[0];
                return "ToolRuns.thrower";
            });
        exit.getMethod("setExitProcedure", procedure).invoke(null, thrower);
        boolean serve = args[0].equals("--serve");
        Method main = Class.forName(args[serve ? 1 : 0]).getMethod("main", String[].class);
        if (serve) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                System.out.println("@@exit " + run(main, line.isEmpty() ? new String[0] : line.split("\t", -1)));
                System.out.flush();
            }
        } else {
            List<List<String>> groups = new ArrayList<>();
            groups.add(new ArrayList<>());
            for (int i = 1; i < args.length; i++) {
                if (args[i].equals("--")) groups.add(new ArrayList<>());
                else groups.get(groups.size() - 1).add(args[i]);
            }
            for (int i = 0; i < groups.size(); i++) {
                System.out.println("@@run " + i);
                System.out.println("@@exit " + run(main, groups.get(i).toArray(new String[0])));
            }
            System.out.flush();
        }
        // The tools' clients may leave non-daemon threads behind; a lone run would have exited.
        Runtime.getRuntime().halt(0);
    }

    /** One run of the tool; its exit code. */
    private static int run(Method main, String[] args) throws IllegalAccessException {
        firstExit = null;
        int code = 0;
        try {
            main.invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (!(cause instanceof Exited)) {
                cause.printStackTrace();  // as an uncaught exception would end a lone run
                code = 1;
            }
        }
        if (firstExit != null) code = firstExit;
        System.out.flush();
        System.err.flush();
        return code;
    }
}
