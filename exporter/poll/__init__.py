"""The poll loop: source -> recompute -> rules -> reassignment -> a snapshot, on a schedule.

    collector.py       Collector: one poll, the last good snapshot, when the series are withdrawn
    loop.py            the poll loop: polls on the ticks, reload checks between them, the hang watchdog
    reload.py          the config file watched by content; what applies at once, what at a restart
    poll_metrics.py    the self metrics of a good poll
    stages.py          the stages between the source and the snapshot, made from the settings
    snapshot.py        Snapshot: a poll's rendered bodies, gzipped once, served many times
    schedule.py        when the next poll starts
    process_memory.py  the process's C heap: malloc arenas, the mmap threshold, trimming

May import: every stage before it (http and config included); never backfill or commands.
"""
