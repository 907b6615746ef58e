"""`python -m tilegate.history ...`: the same as `tilegate history ...`."""

from tilegate.history.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
