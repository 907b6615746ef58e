"""The commands of the `tilegate` command line: one module each (`tilegate/commands/<name>.py`,
as asv's `asv/commands/`), each owning its arguments (`add`) and its run (`run`).

A command module holds `NAME` (the command as typed), `add(sub, shared)` (its parser, from
`tilegate.commands._shared.Shared`'s options that several commands take) and `run(args)` (exit
0 / 1 / 2); `reports(args)`, when it writes reports, names those a crash replaces with a CANNOT
JUDGE report. tilegate.cli imports them and only dispatches (tilegate.commands._shared.dispatch).
"""
