"""Two runs' diagnostic results compared: best-QPS ratios with intervals, verdict and concurrency changes."""
