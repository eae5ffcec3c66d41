"""Readers of the pipeline-side records in a run directory (formats/)."""
