package sidecar.jmx;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.rmi.server.RMISocketFactory;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.rmi.ssl.SslRMIClientSocketFactory;

import static sidecar.jmx.Connecting.connected;

/** Plain RMI sockets with a connect timeout (the JDK's default factory has none). */
final class TimeoutSocketFactory extends RMISocketFactory {
    final int connectTimeoutMs;
    public TimeoutSocketFactory(int connectTimeoutMs) { this.connectTimeoutMs = connectTimeoutMs; }
    public Socket createSocket(String host, int port) throws IOException {
        return connected(host, port, connectTimeoutMs);
    }
    public ServerSocket createServerSocket(int port) throws IOException { return new ServerSocket(port); }
}

/** SSL sockets for the RMI registry lookup, with a connect timeout; same protocol and cipher
 *  properties as SslRMIClientSocketFactory (javax.rmi.ssl.client.enabled*). */
final class TimeoutSslSocketFactory extends SslRMIClientSocketFactory {
    private static final long serialVersionUID = 1L;
    final int connectTimeoutMs;
    public TimeoutSslSocketFactory(int connectTimeoutMs) { this.connectTimeoutMs = connectTimeoutMs; }
    public Socket createSocket(String host, int port) throws IOException {
        Socket raw = connected(host, port, connectTimeoutMs);
        try {
            SSLSocket s = (SSLSocket) ((SSLSocketFactory) SSLSocketFactory.getDefault()).createSocket(raw, host, port, true);
            String protocols = System.getProperty("javax.rmi.ssl.client.enabledProtocols");
            if (protocols != null) s.setEnabledProtocols(protocols.split(","));
            String ciphers = System.getProperty("javax.rmi.ssl.client.enabledCipherSuites");
            if (ciphers != null) s.setEnabledCipherSuites(ciphers.split(","));
            return s;
        } catch (IOException e) {
            raw.close();
            throw e;
        }
    }
    public boolean equals(Object o) { return o instanceof TimeoutSslSocketFactory; }
    public int hashCode() { return TimeoutSslSocketFactory.class.hashCode(); }
}
