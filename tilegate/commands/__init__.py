"""The commands of the `tilegate` command line, one module each (asv's `asv/commands/`): as data
`NAME`, `HELP`, `DESCRIPTION` and the `_shared.Shared` options it takes (`MEASURE`, `PROFILE`,
`PARENTS`, `OUTPUTS`); `arguments(p, shared)` (its own), `run(args)` (exit 0 / 1 / 2) and, when it
writes reports, `reports(args)` (those a crash replaces with CANNOT JUDGE). `_shared.build_parser`
builds the parser; tilegate.cli lists the modules and dispatches."""
