"""The main branch's performance over time: a history store, change points, and a page.

* `store`: an embedded DuckDB database file (default `.perf/history.duckdb`) of measured runs,
  one row per run and one per (run, case); appended from results files, never rewritten.
* `verdicts`: the gate's verdict per case, when a baseline or a verdicts file is given.
* `changepoints`: change points per case on the reference-normalised series, with significance.
* `dashboard`: one self-contained static HTML page (inline data, JS and CSS; works offline).

The command, `tilegate history add | import | list | changepoints | dashboard | prune`, is
tilegate.commands.history.

docs/history.md describes the schema, the commands, the method and the limits. Nothing here
needs a GPU, torch or Triton.
"""
