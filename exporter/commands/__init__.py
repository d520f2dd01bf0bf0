"""The command line, the top of the tree: each command wires the stages below it.

    cli.py           `kafka-jmx-sidecar COMMAND`: argument parsing and dispatch
    serve.py         `serve`, `scrape`, `check-config`
    health.py        `health`: partition states judged under a profile
    demo.py          `demo`: the simulator and the sidecar together
    spark_submit.py  the backfill's entry point for spark-submit (`backfill`'s arguments)

May import anything of the project.
"""
