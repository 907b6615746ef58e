"""What a reader sees: report.md, plots, markdown helpers."""
