"""Diagnostic-mode results of one run: verdicts, best concurrency, intervals, groups pooled."""
