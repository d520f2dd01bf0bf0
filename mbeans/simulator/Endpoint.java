import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.StandardSocketOptions;
import java.nio.channels.SocketChannel;
import java.rmi.registry.LocateRegistry;
import java.rmi.registry.Registry;
import java.rmi.server.ExportException;
import java.rmi.server.RMIClientSocketFactory;
import java.rmi.server.RMIServerSocketFactory;
import java.rmi.server.UnicastRemoteObject;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanServer;
import javax.management.remote.JMXServiceURL;
import javax.management.remote.rmi.RMIConnectorServer;
import javax.management.remote.rmi.RMIJRMPServerImpl;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLServerSocketFactory;
import javax.rmi.ssl.SslRMIClientSocketFactory;

/** The JMX security switches (the same ones a broker's com.sun.management.jmxremote.* sets). */
final class Security {
    final String passwordFile, accessFile;
    final boolean ssl, registrySsl;

    Security(Map<String, Object> m) {
        passwordFile = m.get("password_file") == null ? null : Json.str(m.get("password_file"), "security.password_file");
        accessFile = m.get("access_file") == null ? null : Json.str(m.get("access_file"), "security.access_file");
        ssl = Json.bool(m.get("ssl"), false);
        registrySsl = Json.bool(m.get("registry_ssl"), ssl);
    }
}

/**
 * RMI server sockets on loopback (TLS ones from the default SSLContext, i.e. javax.net.ssl.keyStore,
 * when ssl is set). One factory per endpoint incarnation: equal within it, so the registry and the
 * connector share the port; it remembers every socket so that a failing broker can close them all,
 * accepted connections included, as the death of a real broker's process does.
 */
final class LoopbackServerSocketFactory implements RMIServerSocketFactory {
    private final boolean ssl;
    private final List<ServerSocket> listening = Collections.synchronizedList(new ArrayList<>());
    private final List<Socket> accepted = Collections.synchronizedList(new ArrayList<>());

    LoopbackServerSocketFactory(boolean ssl) {
        this.ssl = ssl;
    }

    public ServerSocket createServerSocket(int port) throws IOException {
        ServerSocket inner;
        if (ssl) {
            SSLServerSocket s = (SSLServerSocket) SSLServerSocketFactory.getDefault().createServerSocket();
            s.setNeedClientAuth(false);
            inner = s;
        } else {
            inner = new ServerSocket();
        }
        inner.setReuseAddress(true);
        inner.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 128);
        ServerSocket tracking = new TrackingServerSocket(inner, accepted);
        listening.add(tracking);
        return tracking;
    }

    void closeAll() {
        synchronized (listening) {
            for (ServerSocket s : listening) ((TrackingServerSocket) s).closeAndWait();
        }
        synchronized (accepted) {
            for (Socket s : accepted) {
                // close() alone is deferred while RMI's handler thread is blocked reading the socket,
                // long enough on a busy machine for one more call to be served; shutdown(2) is not.
                try {
                    s.setSoLinger(true, 0);
                } catch (IOException ignored) {
                }
                try {
                    s.shutdownInput();
                } catch (IOException ignored) {
                }
                try {
                    s.shutdownOutput();
                } catch (IOException ignored) {
                }
                try {
                    s.close();
                } catch (IOException ignored) {
                }
            }
            accepted.clear();
        }
    }
}

/** A ServerSocket that hands out its delegate's connections and remembers them. */
final class TrackingServerSocket extends ServerSocket {
    private final ServerSocket inner;
    private final List<Socket> accepted;
    private int accepting; // threads inside inner.accept()

    TrackingServerSocket(ServerSocket inner, List<Socket> accepted) throws IOException {
        this.inner = inner;
        this.accepted = accepted;
    }

    @Override
    public Socket accept() throws IOException {
        synchronized (this) {
            accepting++;
        }
        Socket s;
        try {
            s = inner.accept();
        } finally {
            synchronized (this) {
                accepting--;
                notifyAll();
            }
        }
        synchronized (accepted) {
            if (accepted.size() >= 64) accepted.removeIf(Socket::isClosed);
            accepted.add(s);
        }
        return s;
    }

    /**
     * Close, and return once the port no longer listens: while a thread is blocked in accept() the
     * JDK only signals it, and the kernel keeps the socket listening until that thread has run.
     */
    void closeAndWait() {
        try {
            inner.close();
        } catch (IOException ignored) {
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        synchronized (this) {
            while (accepting > 0 && System.nanoTime() < deadline) {
                try {
                    wait(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    @Override
    public void close() throws IOException {
        inner.close();
    }

    @Override
    public boolean isClosed() {
        return inner.isClosed();
    }

    @Override
    public boolean isBound() {
        return inner.isBound();
    }

    @Override
    public int getLocalPort() {
        return inner.getLocalPort();
    }

    @Override
    public InetAddress getInetAddress() {
        return inner.getInetAddress();
    }

    @Override
    public java.net.SocketAddress getLocalSocketAddress() {
        return inner.getLocalSocketAddress();
    }

    @Override
    public synchronized void setSoTimeout(int timeout) throws java.net.SocketException {
        inner.setSoTimeout(timeout);
    }

    @Override
    public synchronized int getSoTimeout() throws IOException {
        return inner.getSoTimeout();
    }

    @Override
    public String toString() {
        return inner.toString();
    }
}

/**
 * One node's JMX connector: an RMI registry and the RMI connector server on the same port. While it
 * does not serve (before its node starts, while its broker is failed) the port stays bound by a socket
 * that does not listen: connections are refused, as by a dead broker, yet the kernel hands the port to
 * no other socket, which it would do with a free port of the ephemeral range (a node's MBeans take
 * seconds to build at scale, and a failed broker is restored later on the port its URL names).
 */
final class Endpoint {
    final int port;
    final Security security;
    private Registry registry;
    private RMIConnectorServer connector;
    private LoopbackServerSocketFactory sockets, registrySockets;
    private SocketChannel reservation;

    Endpoint(int port, Security security) {
        this.port = port;
        this.security = security;
    }

    /** An endpoint on a port the kernel picks, held until the node starts. */
    static Endpoint onFreePort(Security security) throws IOException {
        SocketChannel held = reserve(0);
        Endpoint e = new Endpoint(((InetSocketAddress) held.getLocalAddress()).getPort(), security);
        e.reservation = held;
        return e;
    }

    private static SocketChannel reserve(int port) throws IOException {
        SocketChannel s = SocketChannel.open();
        try {
            // SO_REUSEADDR: a stopped endpoint's closed connections may linger in TIME_WAIT on the port
            s.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            return s;
        } catch (IOException e) {
            s.close();
            throw e;
        }
    }

    private void release() {
        try {
            if (reservation != null) reservation.close();
        } catch (IOException ignored) {
        }
        reservation = null;
    }

    String url() {
        return "service:jmx:rmi:///jndi/rmi://127.0.0.1:" + port + "/jmxrmi";
    }

    void start(MBeanServer server) throws Exception {
        LoopbackServerSocketFactory ssf = new LoopbackServerSocketFactory(security.ssl);
        sockets = ssf;
        // TLS on the connector only (registry.ssl=false): the plain registry keeps the port and the
        // connector takes an ephemeral one (RMI cannot share a port between different client factories).
        boolean split = security.ssl && !security.registrySsl;
        registrySockets = split ? new LoopbackServerSocketFactory(false) : ssf;
        RMIClientSocketFactory csf = security.ssl ? new SslRMIClientSocketFactory() : null;
        Map<String, Object> env = new HashMap<>();
        env.put(RMIConnectorServer.RMI_SERVER_SOCKET_FACTORY_ATTRIBUTE, ssf);
        if (csf != null) env.put(RMIConnectorServer.RMI_CLIENT_SOCKET_FACTORY_ATTRIBUTE, csf);
        if (security.passwordFile != null) env.put("jmx.remote.x.password.file", security.passwordFile);
        if (security.accessFile != null) env.put("jmx.remote.x.access.file", security.accessFile);
        release();
        try {
            if (security.registrySsl) {
                registry = LocateRegistry.createRegistry(port, csf, ssf);
            } else {
                registry = LocateRegistry.createRegistry(port, null, registrySockets);
            }
        } catch (ExportException e) {
            throw new UserError("cannot listen on 127.0.0.1:" + port + " for JMX (" + e.getCause()
                    + "); choose another --jmx-port or stop what uses it");
        }
        RMIJRMPServerImpl impl = new RMIJRMPServerImpl(split ? 0 : port, csf, ssf, env);
        connector = new RMIConnectorServer(new JMXServiceURL("rmi", "127.0.0.1", port), env, impl, server);
        connector.start();
        registry.rebind("jmxrmi", impl.toStub());
    }

    void stop() {
        try {
            if (connector != null) connector.stop();
        } catch (IOException ignored) {
        }
        try {
            if (registry != null) UnicastRemoteObject.unexportObject(registry, true);
        } catch (IOException ignored) {
        }
        if (sockets != null) sockets.closeAll(); // no connection outlives a dead broker
        if (registrySockets != null) registrySockets.closeAll();
        connector = null;
        registry = null;
        sockets = registrySockets = null;
        try {
            reservation = reserve(port);
        } catch (IOException e) {
            reservation = null; // taken meanwhile: a restore will say so
        }
    }
}
