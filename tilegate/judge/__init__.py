"""Judging: results and baselines read once, tolerance policies, verdicts, A/B, the exit rule."""
