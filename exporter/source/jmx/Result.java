package sidecar.jmx;

public final class Result {
    public String text;
    public Object[] complex = new Object[0];
    public long roundTrips;
    /** The batch's wall time: what a read cost, its waits overlapped over the connections. */
    public long nanos;
    /** Set when a connection failed (IOException) or the deadline passed; text is then null. */
    public Throwable failure;
    public int failedConnection = -1;
}
