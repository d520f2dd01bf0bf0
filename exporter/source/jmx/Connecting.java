// Connecting to the broker's JMX/RMI connector: plain or TLS sockets with a connect timeout
// (Sockets.java), one connection or a poll's several at once, closed without waiting.
package sidecar.jmx;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.rmi.server.RMISocketFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeoutException;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

import static sidecar.jmx.SidecarJmx.POOL;
import static sidecar.jmx.SidecarJmx.awaited;

public final class Connecting {
    private Connecting() {}

    /** A plain socket connected within timeoutMs (closed again when that fails). */
    static Socket connected(String host, int port, int timeoutMs) throws IOException {
        Socket s = new Socket();
        try {
            s.connect(new InetSocketAddress(host, port), timeoutMs);
        } catch (IOException e) {
            s.close();
            throw e;
        }
        return s;
    }

    private static boolean factoryInstalled;

    /** Installs the plain-socket factory once per JVM (RMISocketFactory can be set only once). */
    public static synchronized boolean installSocketFactory(int connectTimeoutMs) throws IOException {
        if (factoryInstalled || RMISocketFactory.getSocketFactory() != null) return false;
        RMISocketFactory.setSocketFactory(new TimeoutSocketFactory(connectTimeoutMs));
        factoryInstalled = true;
        return true;
    }

    /** JMXConnectorFactory.connect, bounded by connectTimeoutMs as a whole (registry lookup,
     *  authentication, stub connection). On timeout the attempt is abandoned and closed later. */
    public static JMXConnector connect(String url, String user, String password, boolean ssl,
                                       int connectTimeoutMs) throws Exception {
        final JMXServiceURL serviceUrl = new JMXServiceURL(url);
        final Map<String, Object> env = new HashMap<>();
        // no heartbeat thread: the client notices a broken connection at its next call and
        // reconnects itself, so no RMI call happens that the round-trip counters do not see
        env.put("jmx.remote.x.client.connection.check.period", 0L);
        if (user != null && !user.isEmpty()) {
            env.put(JMXConnector.CREDENTIALS, new String[] {user, password == null ? "" : password});
        }
        if (ssl) {
            env.put("com.sun.jndi.rmi.factory.socket", new TimeoutSslSocketFactory(connectTimeoutMs));
        }
        Future<JMXConnector> f = POOL.submit(() -> JMXConnectorFactory.connect(serviceUrl, env));
        try {
            return awaited(f, connectTimeoutMs);
        } catch (TimeoutException | InterruptedException e) {
            // a timeout, or the caller interrupted (the sidecar stopping): the attempt is abandoned
            f.cancel(true);
            POOL.submit(() -> {  // close whatever the abandoned attempt still produces
                try { closeQuietly(f.get()); } catch (Exception ignored) { }
            });
            if (e instanceof InterruptedException) throw e;
            throw new SocketTimeoutException("connect timed out after " + connectTimeoutMs + " ms");
        }
    }

    /** n connect()s at once (a poll's connections are ready in the time of one); when one fails,
     *  the others are closed and its exception thrown. */
    public static JMXConnector[] connectAll(String url, String user, String password, boolean ssl,
                                            int connectTimeoutMs, int n) throws Exception {
        List<Future<JMXConnector>> pending = new ArrayList<>();
        for (int i = 0; i < n; i++) pending.add(POOL.submit(() -> connect(url, user, password, ssl, connectTimeoutMs)));
        JMXConnector[] out = new JMXConnector[n];
        Exception failed = null;
        for (int i = 0; i < n; i++) {
            try {
                out[i] = pending.get(i).get();
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                if (failed == null) failed = c instanceof Exception ? (Exception) c : e;
            } catch (InterruptedException e) {  // the sidecar stopping: the attempts are abandoned
                for (Future<JMXConnector> f : pending) f.cancel(true);
                for (JMXConnector c : out) closeQuietly(c);
                throw e;
            }
        }
        if (failed != null) {
            for (JMXConnector c : out) closeQuietly(c);
            throw failed;
        }
        return out;
    }

    public static void closeQuietly(JMXConnector c) {
        if (c == null) return;
        POOL.submit(() -> {
            try { c.close(); } catch (Exception ignored) { }
        });
    }
}
