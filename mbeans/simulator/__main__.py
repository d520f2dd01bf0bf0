"""`python -m mbeans.simulator ...` is `kafka-jmx-sidecar simulate ...`."""
import sys

from mbeans.simulator.cli import main

sys.exit(main())
