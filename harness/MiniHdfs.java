import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A real HDFS for the tests: Hadoop's MiniDFSCluster (a NameNode and DataNodes in this JVM), every
 * address on loopback (a DataNode listens on all interfaces by default).
 *
 *   java -cp 'hadoop-3.5/*' MiniHdfs BASEDIR NAMENODE_PORT DATANODES
 *
 * prints `READY hdfs://127.0.0.1:PORT` once the DataNodes have registered, then runs until killed.
 * The NameNode's superuser is the user this JVM runs as (HADOOP_USER_NAME under simple
 * authentication): a client of another name is an ordinary user, whose file permissions HDFS
 * checks. The root directory is open to every user, as /tmp is on a machine.
 */
public class MiniHdfs {
    public static void main(String[] args) throws Exception {
        String base = args[0];
        int port = Integer.parseInt(args[1]);
        int dataNodes = Integer.parseInt(args[2]);
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base);
        conf.set("dfs.namenode.rpc-address", "127.0.0.1:" + port);
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        conf.setInt("dfs.replication", 1);
        conf.setBoolean("dfs.webhdfs.enabled", false);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).nameNodePort(port).numDataNodes(dataNodes)
                .build();
        cluster.waitActive();
        FileSystem fs = cluster.getFileSystem();
        fs.setPermission(new Path("/"), new FsPermission((short) 0777));
        System.out.println("READY " + fs.getUri());
        System.out.flush();
        Thread.currentThread().join();
    }
}
