"""The main branch's performance over time: change points and a page over the history store
(docs/history.md; its command: tilegate.commands.history). Needs no GPU, torch or Triton."""
