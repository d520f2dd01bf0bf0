"""The `kafka-jmx-sidecar` command line: its commands, their arguments, and dispatch to the modules
that run them (docs/running.md documents each command)."""
from __future__ import annotations

import argparse
import sys
from importlib import resources

from kafka_jmx_sidecar.exporter import __version__
from kafka_jmx_sidecar.exporter.commands import logs
from kafka_jmx_sidecar.mbeans.health import PROFILES


def _add_health(sub) -> None:
    p = sub.add_parser(
        "health", help="judge partition states (JSON Lines or kafka-topics.sh --describe output)",
        description="Judge partition states read from JSON Lines or saved `kafka-topics.sh --describe` "
                    "output (auto-detected; `-` or no file reads stdin). Malformed lines are reported "
                    "with their line number and the exit code is 2; good lines are still judged.")
    p.add_argument("files", nargs="*", metavar="FILE")
    p.add_argument("--semantics", choices=list(PROFILES), default="kafka-3.7",
                   help="which Kafka behaviour to judge by (default: kafka-3.7, broker gauges of Kafka 3.7+)")
    p.add_argument("--only", metavar="KINDS",
                   help="print only partitions that are any of: under-replicated, under-min-isr, "
                        "at-min-isr, unavailable, and with --semantics kafka-4.1 elr-under-min-isr, "
                        "elr-offline-clean, elr-offline-unclean (comma-separated, ORed as in kafka-topics.sh)")
    p.add_argument("--output", choices=("table", "jsonl"), default="table")
    p.add_argument("--default-min-isr", type=int, default=1, metavar="N",
                   help="min.insync.replicas for topics whose describe header does not show one "
                        "(the broker default; default 1)")
    p.add_argument("--live-brokers", metavar="IDS",
                   help="the brokers registered when the input was taken (comma-separated), for "
                        "states that do not say (describe output never does): a leader not among "
                        "them counts as dead, as kafka-topics.sh and the controller count it "
                        "(default: every leader is taken to be live)")
    p.set_defaults(func=_run_health)


def _run_health(args) -> int:
    from kafka_jmx_sidecar.exporter.commands import health as health_report

    if args.default_min_isr < 1:
        print("error: --default-min-isr must be at least 1", file=sys.stderr)
        return 2
    return health_report.run(args.files, args.semantics, args.only, args.output, args.default_min_isr,
                             live_brokers=args.live_brokers)


def _add_sidecar(sub) -> None:
    p = sub.add_parser("serve", help="run the sidecar: poll the broker, serve /metrics",
                       description="Poll the broker over JMX on the sidecar's own clock and serve the "
                                   "last complete poll on /metrics.")
    p.add_argument("--config", required=True, metavar="FILE",
                   help="jmx_exporter YAML (rules unchanged) with the sidecar's settings under `sidecar:`")
    p.add_argument("--web.config.file", dest="web_config_file", metavar="FILE",
                   help="TLS and basic auth for /metrics (Prometheus exporter web-config format)")
    # Prometheus exporters' flag name first; the first spelling stays as an alias
    p.add_argument("--web.listen-address", "--listen", dest="listen", metavar="HOST:PORT",
                   help="overrides sidecar.listenAddress")
    p.set_defaults(func=_run_serve)

    p = sub.add_parser("scrape", help="poll the broker once and print the metrics",
                       description="One poll, printed in the Prometheus text format 0.0.4 as "
                                   "jmx_exporter serves it (--openmetrics for OpenMetrics). Exits non-zero "
                                   "with a one-line reason on stderr when the broker cannot be read.")
    p.add_argument("--config", required=True, metavar="FILE")
    p.add_argument("--openmetrics", action="store_true")
    p.set_defaults(func=_run_scrape)

    p = sub.add_parser("check-config", help="validate a configuration file (exit 0 or 2)")
    p.add_argument("file", metavar="FILE", nargs="?")
    p.add_argument("--config", metavar="FILE", help="the same as FILE, spelled as serve and scrape take it")
    p.add_argument("--web.config.file", dest="web_config_file", metavar="WEB",
                   help="also check this web-config file, as serve would read it (alone: only this file, "
                        "like promtool check web-config)")
    p.set_defaults(func=_run_check_config)


def _run_check_config(args) -> int:
    if args.file is not None and args.config is not None or \
            args.file is None and args.config is None and args.web_config_file is None:
        print("error: check-config takes one configuration file (FILE or --config FILE) and/or "
              "--web.config.file WEB", file=sys.stderr)
        return 2
    return _sidecar().check_config(args.file or args.config, web_config_file=args.web_config_file)


def _sidecar():
    from kafka_jmx_sidecar.exporter.commands import serve as sidecar

    return sidecar


def _run_scrape(a: argparse.Namespace) -> int:
    sidecar = _sidecar()
    sidecar.exit_now(sidecar.scrape(a.config, a.openmetrics))  # printed and closed: no JVM shutdown to wait for
    return 0  # not reached


def _run_serve(args) -> int:
    overrides = {"web_config_file": args.web_config_file, "listen_address": args.listen}
    return _sidecar().serve(args.config, overrides)


def _add_simulate(sub) -> None:
    try:
        from kafka_jmx_sidecar.mbeans.simulator import cli as simulator_cli
    except ImportError:
        return
    p = sub.add_parser("simulate", help="run the Kafka broker simulator (real JMX/RMI)")
    simulator_cli.add_arguments(p)
    p.set_defaults(func=simulator_cli.run)


def _add_demo(sub) -> None:
    p = sub.add_parser("demo", help="the simulator and the sidecar playing a scenario: see every health metric move",
                       description="Starts the broker simulator and the sidecar next to broker 1, plays a "
                                   "scripted scenario (a broker fails, an ISR shrinks below min ISR, a "
                                   "reassignment moves bytes, the broker comes back) and prints, at each "
                                   "step, the health values /metrics shows beside what the health formulas "
                                   "say for the same partition states. Broker 1 poses as an old Kafka (2.2) "
                                   "and the sidecar recomputes its health values under kafka-3.7 "
                                   "(sidecar.recompute). Ctrl-C stops everything it started.")
    p.add_argument("--keep-serving", action="store_true", help="keep the endpoint up after the scenario")
    p.add_argument("--port", type=int, default=0, help="the sidecar's port (default: a free one)")
    p.add_argument("--kafka-version", default=None,
                   help="the release broker 1 poses as (default 2.2); the sidecar recomputes under kafka-3.7")
    p.add_argument("--examples", action="store_true",
                   help="only judge the seed KIP examples with `health` under each profile (no JVM)")
    p.set_defaults(func=_run_demo)


def _run_demo(args) -> int:
    if not args.examples:
        from kafka_jmx_sidecar.exporter.commands import demo

        return demo.run(args.keep_serving, args.port, kafka_version=args.kafka_version or demo.DEMO_VERSION)
    from kafka_jmx_sidecar.exporter.commands import health as health_report

    examples = resources.files("kafka_jmx_sidecar.mbeans").joinpath("kip_examples.jsonl")
    with resources.as_file(examples) as path:
        for name in ("kafka-2.5", "kafka-3.7", "topic-command"):
            print(f"== the seed KIP examples judged as {name}: {PROFILES[name].summary}")
            code = health_report.run([str(path)], semantics=name)
            if code:
                return code
            print()
    return 0


def _add_backfill(sub) -> None:
    p = sub.add_parser(
        "backfill", help="Spark job: sidecar archives and saved describe dumps -> health series for promtool",
        description="Reconstructs every partition's state at each step of a time grid from saved "
                    "`kafka-topics.sh --describe` dumps (a dump's state holds until the next dump), judges "
                    "it under --semantics with the health formulas, names the values with the sidecar's "
                    "rule engine and config (default: the shipped cluster-wide rules, rules/kafka-cluster.yml) "
                    "and writes OpenMetrics files that `promtool tsdb create-blocks-from openmetrics` "
                    "accepts as they are, with manifest.json and rejects.jsonl. From a sidecar's archive "
                    "(sidecar.archive) it writes what that sidecar served at each poll: the same recompute "
                    "and rules (default: rules/kafka-health.yml), each poll's values holding until the next "
                    "poll. Runs on local[*] unless "
                    "--master says otherwise; also runnable with spark-submit.")
    p.add_argument("--input", nargs="+", required=True, metavar="PATH",
                   help="describe dumps and sidecar archives (told apart by content): files or directories "
                        "(walked; names starting with . or _ skipped), paths or Hadoop file system URIs "
                        "(hdfs://, s3a://, ...)")
    p.add_argument("--output", required=True, metavar="DIR",
                   help="the output directory, a path or a Hadoop file system URI (hdfs://, s3a://, ...): "
                        "written aside and renamed into place")
    p.add_argument("--replace", action="store_true",
                   help="replace the output of a previous backfill in --output (without it: refused)")
    p.add_argument("--config", metavar="FILE", help="the sidecar's jmx_exporter YAML (its rules name the series)")
    p.add_argument("--semantics", choices=list(PROFILES),
                   help="the health profile (default: the config's sidecar.recompute.semantics, else kafka-3.7)")
    p.add_argument("--start", metavar="T", help="ISO-8601 or epoch seconds (default: the first dump or poll)")
    p.add_argument("--end", metavar="T", help="ISO-8601 or epoch seconds (default: the last dump or poll)")
    p.add_argument("--step", default="15s", metavar="D", help="the grid's step (default 15s)")
    p.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    p.add_argument("--conf", action="append", default=[], metavar="K=V", help="a Spark setting, repeatable")
    p.add_argument("--format", choices=("openmetrics", "parquet"), default="openmetrics")
    p.add_argument("--import", dest="import_dir", metavar="DIR",
                   help="then run promtool tsdb create-blocks-from openmetrics into DIR")
    p.add_argument("--describe-time-regex", metavar="RE",
                   help="finds a dump's time in its file name (group `time`, else group 1, else the match: "
                        "ISO-8601 or epoch seconds); default: the first ISO-8601 timestamp, else the mtime")
    p.add_argument("--default-min-isr", type=int, default=1, metavar="N",
                   help="min.insync.replicas of topics whose describe header shows none (the broker default)")
    p.add_argument("--max-reject-ratio", type=float, default=0.0, metavar="R",
                   help="rejected lines / lines read above which the exit code is 3 (default 0: any reject)")
    p.add_argument("--broker-label", metavar="NAME",
                   help="archives: add NAME=\"<broker id>\" to every series (needed for several brokers' archives)")
    p.add_argument("--max-hold", default="5m", metavar="D",
                   help="archives: the longest a poll's values hold without a next poll (default 5m, "
                        "Prometheus's lookback)")
    p.add_argument("--max-file-bytes", type=int, default=64 * 1024 * 1024, metavar="N",
                   help="an output file is closed at the first series boundary past this size (default 64 MiB)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a progress record on stderr every --progress-interval while Spark works (tasks, "
                        "bytes written, rate, time left), in --log.format (default: when stderr is a terminal)")
    p.add_argument("--progress-interval", type=_duration_s, default=5.0, metavar="D",
                   help="the time between two progress records (default 5s)")
    p.add_argument("--summary", choices=("text", "json"), default="text",
                   help="the final summary on stdout: text (default) or one JSON object (also when the run "
                        "fails or is stopped), for cron jobs")
    p.set_defaults(func=_run_backfill)


def _duration_s(text: str) -> float:
    from kafka_jmx_sidecar.exporter.backfill.grid import parse_duration_ms

    try:
        return parse_duration_ms(text) / 1000
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _progress_wanted(args, stderr=None) -> bool:
    """--progress, --no-progress, else whether stderr is a terminal (where a person watches)."""
    if args.progress is not None:
        return args.progress
    stream = stderr or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


def _run_backfill(args) -> int:
    try:
        import pyspark  # noqa: F401  (the spark extra)

        from kafka_jmx_sidecar.exporter.backfill import job
    except ImportError as e:
        logs.failure(f"error: backfill needs pyspark ({e}); install the spark extra: "
                     "pip install 'kafka-jmx-sidecar[spark]'")
        return 2
    from kafka_jmx_sidecar.exporter.base.config_file import ConfigError

    from kafka_jmx_sidecar.exporter.backfill import summary

    opts = job.Options(args.input, args.output, args.config, args.semantics, args.start, args.end, args.step,
                       args.master, args.conf, args.format, args.import_dir, args.describe_time_regex,
                       args.default_min_isr, args.max_reject_ratio, args.max_file_bytes, args.broker_label,
                       args.max_hold, progress=_progress_wanted(args), progress_every_s=args.progress_interval,
                       summary=args.summary, log_format=args.log_format, log_level=args.log_level,
                       replace=args.replace)
    json_summary = args.summary == "json"
    try:
        return job.run(opts)
    except job.Interrupted as e:  # SIGINT or SIGTERM: the job stopped Spark and removed its partial output
        logs.failure(str(e))
        if json_summary:
            summary.print_json(summary.failure(e.exit_code, "interrupted", str(e)))
        return e.exit_code
    except (job.UsageError, ValueError, FileNotFoundError, FileExistsError, PermissionError, ConfigError,
            RuntimeError) as e:
        logs.failure(f"error: {e}")
        if json_summary:
            summary.print_json(summary.failure(summary.EXIT_USAGE, "error", str(e), getattr(e, "figures", None)))
        return summary.EXIT_USAGE
    except KeyboardInterrupt:  # Ctrl-C before the job began (listing the inputs)
        if json_summary:
            summary.print_json(summary.failure(130, "interrupted", "backfill: stopped by SIGINT before it began"))
        return 130
    except Exception as e:  # a Spark job failed: its traceback follows, and the exit code is 1
        if json_summary:
            summary.print_json(summary.failure(summary.EXIT_FAILED, "failed", summary.error_text(e)))
        raise


def _logging_flags() -> argparse.ArgumentParser:
    """--log.level and --log.format, taken by every command (after its name)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--log.level", "--log-level", dest="log_level", default="info", choices=logs.LEVELS,
                        help="the least severe log line written (default info; --log-level is the same flag)")
    common.add_argument("--log.format", dest="log_format", default="text", choices=logs.FORMATS,
                        help="text (default), logfmt or json: one line per record on stderr")
    return common


class _Subcommands(argparse._SubParsersAction):
    """Every command gets the logging flags."""

    def add_parser(self, name, **kwargs):
        kwargs.setdefault("parents", []).append(_logging_flags())
        return super().add_parser(name, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-jmx-sidecar",
        description="A Prometheus sidecar for Apache Kafka: JMX scrape with jmx_exporter rules, "
                    "and partition health recomputed the way Kafka defines it.")
    parser.add_argument("--version", action="version", version=f"kafka-jmx-sidecar {__version__}")
    parser.register("action", "parsers", _Subcommands)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_health(sub)
    _add_sidecar(sub)
    _add_simulate(sub)
    _add_demo(sub)
    _add_backfill(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.configure(args.log_level, args.log_format)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `health ... | head` closes the pipe early; that is not an error.
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
