"""Allocator memory of one run: series, the peak and what was alive at it, by module and operator."""
