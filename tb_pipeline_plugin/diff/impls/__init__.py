"""Every diff route's implementation: `impl(pair, query)`, a `Pair`
(diff/pair.py) and the typed values the route parsed in, the route's answer
out but the runs' references, which the route adds. Each answer is a view
of the pair, made once.

The server parses request parameters into the queries here; the notebook
API (`compare.py`), the reports and the CLI call the same functions, so
every surface shows the same numbers.
"""
