// jmx_exporter 1.x (a release's collector and client_java classes) started afresh for each
// configuration file named on stdin, in one JVM: what JmxExporterStandalone.java sets up (the 1.x
// Standalone main: BuildInfoMetrics and a JmxCollector(file, STANDALONE) served by client_java's
// HTTPServer), but on a registry of its own instead of the default one, so that the next file
// starts from nothing. Saves a JVM start per file (the property test runs dozens).
// tests/real/test_property_vs_jmx_exporter.py checks it serves what JmxExporterStandalone serves.
//
//   java -cp 'LIB/*:DIR' PerConfigExporter1x
//   stdin: CONFIG.yml   stdout: PORT <port>   (the previous file's server is closed first)
import io.prometheus.jmx.BuildInfoMetrics;
import io.prometheus.jmx.JmxCollector;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;

public class PerConfigExporter1x {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        HTTPServer server = null;
        String line;
        while ((line = in.readLine()) != null) {
            if (server != null) server.close();
            server = null;
            try {
                PrometheusRegistry registry = new PrometheusRegistry();
                new BuildInfoMetrics().register(registry);
                new JmxCollector(new File(line), JmxCollector.Mode.STANDALONE).register(registry);
                server = HTTPServer.builder().hostname("127.0.0.1").port(0).registry(registry).buildAndStart();
                System.out.println("PORT " + server.getPort());
            } catch (Exception e) {
                System.out.println("ERROR " + e.toString().replace('\n', ' '));
            }
            System.out.flush();
        }
        System.exit(0);
    }
}
