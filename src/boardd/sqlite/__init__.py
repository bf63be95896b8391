"""How boardd uses SQLite, for both of its stores (the logdir store and the lineage store).

``connection``: the rules every connection follows (busy timeout, no double-quoted strings,
WAL, synchronous=NORMAL) and the write transaction (``immediate``); ``ladder``: migrations as
a ladder of steps on ``PRAGMA user_version``. Imports nothing else of boardd, so that
``boardd.store`` and ``boardd.metadata``, which must not import each other, both use it.
"""
