"""`pytest perf_tests` in this repository: the tilegate plugin, where pytest does not find it.

Installed, tilegate's pytest11 entry point loads the plugin in every pytest; in this checkout,
not installed (PYTHONPATH=. or pytest's `pythonpath`), nothing does, and the protocol's test
would fail with "fixture 'tilegate_case' not found". Named on the command line, this directory
runs the suite (tilegate.plugin: the benchmark's default profile; without a GPU its interpreter
profile).
"""

from importlib.metadata import entry_points

_INSTALLED = any(ep.value == "tilegate.plugin" for ep in entry_points(group="pytest11"))
pytest_plugins = [] if _INSTALLED else ["tilegate.plugin"]
