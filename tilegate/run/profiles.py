"""`--profile`: a profile of the configured benchmark, for every command that takes one.

The profile table is the benchmark's ([tool.tilegate] benchmark, tilegate.config), so it is known
only once the benchmark is imported (which may import torch). Hence: argument parsing never
loads it, except for `--help`, which lists the profiles when the configuration loads and says
nothing about them when it does not; `check_profile` is the one check, run by each command
before any GPU work (exit 2, naming the benchmark's profiles). No `--profile` is the benchmark's
default profile (`Benchmark.default_profile`, else its first): never a name it may not have.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from tilegate.errors import InputError


def check_profile(name: str | None) -> str:
    """The profile `name` names (None: the configured benchmark's default); InputError unless it
    is a profile of the configured benchmark (before any GPU work)."""
    from tilegate.config import find

    config = find()
    bench = config.load_benchmark()
    if name is None:
        return str(bench.profile(None).name)
    if name not in bench.profile_map:
        raise InputError(
            f"unknown profile: --profile {name!r} is not a profile of benchmark {bench.name!r} "
            f"({config.benchmark}); its profiles: {', '.join(bench.profile_map)}"
        )
    return name


def interpreter(name: str) -> bool:
    """Whether profile `name` of the configured benchmark runs under Triton's CPU interpreter
    (a smoke run: no GPU, timings meaningless). False for a name it does not have."""
    from tilegate.config import find

    profile = find().load_benchmark().profile_map.get(name)
    return bool(profile is not None and profile.interpreter)


def profile_names() -> tuple[str, ...] | None:
    """The configured benchmark's profiles; None when there is no configuration or it does not load."""
    from tilegate.config import find

    try:
        return tuple(find().load_benchmark().profile_map)
    except InputError:
        return None


def wants_help(argv: Sequence[str]) -> bool:
    """`argv` asks for --help (or -h, or an abbreviation argparse accepts: --he); not after `--`."""
    options = list(argv)
    if "--" in options:
        options = options[: options.index("--")]
    return any(a == "-h" or (len(a) >= 3 and "--help".startswith(a)) for a in options)


def add_profile_argument(
    parser: argparse.ArgumentParser,
    *,
    use: str,
    names: Sequence[str] | None,
    default: str = "the benchmark's default profile",
) -> None:
    """`--profile` on `parser`: `use` says what it is for; `names` (the benchmark's profiles,
    loaded for --help) its choices; without them any string, which check_profile checks."""
    parser.add_argument(
        "--profile",
        default=None,
        choices=list(names) if names else None,
        metavar=None if names else "PROFILE",
        help=f"{use} (default: {default})",
    )
