// jmx_exporter 0.x (the packaged 0.20.0 jar's own classes) started afresh for each configuration
// file named on stdin, in one JVM: what `java -jar jmx_prometheus_httpserver.jar HOST:PORT FILE`
// (io.prometheus.jmx.WebServer) sets up, a BuildInfoCollector and a JmxCollector(file, STANDALONE)
// served by the HTTPServerFactory, but on a registry of its own instead of the default one, so
// that the next file starts from nothing. Saves a JVM start per file (the property test runs
// dozens). tests/real/test_property_vs_jmx_exporter.py checks it serves what the jar serves.
//
//   java -cp jmx_prometheus_httpserver-0.20.0.jar:DIR PerConfigExporter0x
//   stdin: CONFIG.yml   stdout: PORT <port>   (the previous file's server is closed first)
import io.prometheus.client.CollectorRegistry;
import io.prometheus.client.exporter.HTTPServer;
import io.prometheus.jmx.BuildInfoCollector;
import io.prometheus.jmx.JmxCollector;
import io.prometheus.jmx.common.http.HTTPServerFactory;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;

public class PerConfigExporter0x {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        HTTPServer server = null;
        String line;
        while ((line = in.readLine()) != null) {
            if (server != null) server.close();
            server = null;
            try {
                File file = new File(line);
                CollectorRegistry registry = new CollectorRegistry();
                new BuildInfoCollector().register(registry);
                new JmxCollector(file, JmxCollector.Mode.STANDALONE).register(registry);
                server = new HTTPServerFactory().createHTTPServer(new InetSocketAddress("127.0.0.1", 0), registry, false, file);
                System.out.println("PORT " + server.getPort());
            } catch (Exception e) {
                System.out.println("ERROR " + e.toString().replace('\n', ' '));
            }
            System.out.flush();
        }
        System.exit(0);
    }
}
