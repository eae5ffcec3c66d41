"""Baseline vs experimental: pieces, alignment, delta tables (issue 3)."""
