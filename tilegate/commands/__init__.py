"""The commands of the `tilegate` command line: one module each (`tilegate/commands/<name>.py`,
as asv's `asv/commands/`), each owning its arguments and its run.

A command module holds, as data, `NAME` (the command as typed), `HELP`, `DESCRIPTION` and the
options of `tilegate.commands._shared.Shared` it takes (`MEASURE`, `PROFILE`, `PARENTS`,
`OUTPUTS`); `arguments(p, shared)` adds its own; `run(args)` (exit 0 / 1 / 2); `reports(args)`,
when it writes reports, names those a crash replaces with a CANNOT JUDGE report.
`_shared.build_parser` builds every subparser; tilegate.cli only lists the modules and dispatches.
"""
