"""The backfill as a spark-submit application: the same arguments as `kafka-jmx-sidecar backfill`.

    spark-submit --master yarn --py-files sidecar.zip \
        "$(python -c 'import kafka_jmx_sidecar.exporter.commands.spark_submit as m; print(m.__file__)')" --input ... --output ...

spark-submit's own --master and --conf apply (the job adds local[*] only when none is set).
"""
from __future__ import annotations

import sys

from kafka_jmx_sidecar.exporter.commands.cli import main

if __name__ == "__main__":
    sys.exit(main(["backfill", *sys.argv[1:]]))
