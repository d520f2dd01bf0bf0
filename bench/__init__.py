"""The benchmarks, each run from the repository root as a module: `python -m bench.NAME`.
`make bench` runs every one that is a program; the others are the benchmarks' own helpers.
"""
