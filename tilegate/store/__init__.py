"""Every file tilegate keeps, read and written in one place (pytest-benchmark's storage/ shape).

Each store offers `location` (where it keeps its files), `load`, `save` and `query` (what it
holds), and hands out objects: the judge sees Runs, Baselines, Noise and Tolerances, never a
path it opens (tests/test_store.py holds tilegate/judge/ to that).

    files         results files, baselines/<gpu>.json, the A/B noise files baselines/<gpu>.ab.json,
                  tolerances.toml (`Baselines`), a pull request's baselines/ against its base's
    fingerprints  the compile fingerprints, baselines/fingerprints/triton-<v>/<arch>.json
    historydb     the history: a DuckDB database of measured runs (`open_store`)
"""
