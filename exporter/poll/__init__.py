"""The poll loop: source -> recompute -> rules -> reassignment -> a snapshot, on a schedule.

    collector.py       Collector: one poll, the loop, reload, the last good snapshot
    snapshot.py        Snapshot: a poll's rendered bodies, gzipped once, served many times
    schedule.py        when the next poll starts
    process_memory.py  the process's C heap: malloc arenas, the mmap threshold, trimming

May import: every stage before it (http and config included); never backfill or commands.
"""
