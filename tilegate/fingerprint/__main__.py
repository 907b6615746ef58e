"""`python -m tilegate.fingerprint`: see tilegate.fingerprint.cli."""

import sys

from tilegate.fingerprint.cli import main

if __name__ == "__main__":  # compile workers are spawned and must not run the gate again
    sys.exit(main())
