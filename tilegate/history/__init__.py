"""The main branch's performance over time: a history store, change points, and a page.

Its modules: docs/architecture.md's layout table; its command: tilegate.commands.history.
docs/history.md describes the schema, the commands, the method and the limits. Nothing here
needs a GPU, torch or Triton.
"""
