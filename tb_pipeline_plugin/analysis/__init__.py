"""Every per-run computation: pure functions from a run's tables to DataFrames."""
