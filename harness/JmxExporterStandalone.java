// The standalone jmx_exporter for the 1.x collectors whose packaged standalone jar Maven Central
// does not serve here (harness/programs/jmx_exporter-1.6.0/pom.xml). It does what the 1.x
// Standalone main does for the HTTP mode, with the release's own classes: BuildInfoMetrics and a
// JmxCollector(file, STANDALONE) registered on the default registry, served by client_java's
// HTTPServer. The `httpServer` block of the YAML file (auth, TLS) is not read: tests of that block
// run the packaged 1.0.1 server.
//
//   java -cp 'LIB/*' JmxExporterStandalone.java [HOST:]PORT CONFIG.yml
import io.prometheus.jmx.BuildInfoMetrics;
import io.prometheus.jmx.JmxCollector;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.File;

public class JmxExporterStandalone {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: JmxExporterStandalone [HOST:]PORT CONFIG.yml");
            System.exit(1);
        }
        int colon = args[0].lastIndexOf(':');
        String host = colon < 0 ? "0.0.0.0" : args[0].substring(0, colon);
        int port = Integer.parseInt(args[0].substring(colon + 1));
        PrometheusRegistry registry = PrometheusRegistry.defaultRegistry;
        new BuildInfoMetrics().register(registry);
        new JmxCollector(new File(args[1]), JmxCollector.Mode.STANDALONE).register(registry);
        HTTPServer.builder().hostname(host).port(port).registry(registry).buildAndStart();
        System.out.println("READY");
        Thread.currentThread().join();
    }
}
