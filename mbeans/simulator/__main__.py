"""`python -m mbeans.simulator ...` is `kafka-jmx-sidecar simulate ...`."""
import sys

from kafka_jmx_sidecar.mbeans.simulator.cli import main

sys.exit(main())
