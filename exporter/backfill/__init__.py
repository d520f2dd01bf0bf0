"""The backfill job (`kafka-jmx-sidecar backfill`): partition states over time -> the health series
the sidecar would have served at each step, as OpenMetrics files promtool imports (or Parquet).

  session.py        the SparkSession (local[*] by default, --master and --conf passed through) and
                    the run's log lines
  shipping.py       the project on the executors: shipped where it is missing, one line where they
                    lack its dependencies or import another release
  storage.py        the inputs and the output on any Hadoop file system (paths, hdfs://, s3a://,
                    ...) from the driver; executors read files through Spark (`read_files`)
  plan.py           the options, the inputs listed and told apart, the output's URI: what a run does
  inputs.py         what an input format is (read on Spark, tallied, turned into series): the job
                    sees only that, and each format below is one implementation
  columns.py        mbeans/health.py's formulas evaluated on Spark Columns (the same definitions)
  grid.py           the time grid: --start, --end, --step, and which steps a state holds for
  describe_dumps.py saved `kafka-topics.sh --describe` output -> a table of partition states
  archive_input.py  a sidecar's archive, one file per task -> the MBean values its rules read at
                    each poll, as runs of equal values
  archive_health.py the health families of a replayed poll, through the live recompute itself
  archive_leaders.py what an archive says of the partitions its broker leads, as runs of Counts
  archive_cluster.py several brokers' archives -> the cluster-wide view (each partition once, a gap
                    where a broker is missing)
  cluster_rows.py   partition states -> the cluster-wide view's MBean values per step interval
  naming.py         the rule engine applied once per distinct ObjectName and attribute, joined back
  openmetrics.py    series -> OpenMetrics text promtool accepts (seconds, sorted, `# EOF`), in files
                    of bounded size
  writing.py        the files, Parquet and the rejects, written by the executors through Spark
  output.py         the output directory: the manifest, atomic placement (what killed runs left
                    beside it removed), promtool import
  stopping.py       SIGINT and SIGTERM: the Spark session stopped, one line, no traceback
  progress.py       the run's phases, timed, and (--progress) a record every few seconds from
                    Spark's status tracker and the bytes written
  summary.py        the final summary: text, or one JSON object (--summary json), exit codes
  job.py            the whole run, step by step

Describe dumps give one row per partition per observation: `t` (seconds), `topic`, `partition`,
`leader` (-1: none) and the `Counts` fields of mbeans/health.py, computed at the edge by
`counts_of`, so no formula is re-typed in Spark. An archive gives MBean values directly (a
broker's own view, recomputed as the live sidecar did).
Importing this package needs pyspark (the `spark` extra); the sidecar never imports it.

May import: every stage before it (the archive's reader, the live recompute, the rule engine, the
writers, the configuration); only the commands import it.
"""
