"""`python -m tilegate ...`: the same command line as the `tilegate` script."""

from tilegate.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
