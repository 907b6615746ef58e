"""Every file tilegate keeps, read and written in one place (pytest-benchmark's storage/ shape).

Each store offers `location` (where it keeps its files), `load`, `save` and `query` (what it
holds), and hands out objects: the judge sees Runs, Baselines, Noise and Tolerances, never a
path it opens (tests/test_store.py holds tilegate/judge/ to that).
Its modules: docs/architecture.md's layout table.
"""
