"""Baseline vs experimental: pieces, alignment, delta tables."""
