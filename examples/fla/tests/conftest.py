"""fla_bench importable from any working directory."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parents[1])
if HERE not in sys.path:
    sys.path.insert(0, HERE)
