"""The HTML report's two charts, as inline SVG drawn here: the waterfall
(baseline step → each contributor → experimental step) and the step-time
trend of both runs. SVG text needs no script and no library, prints, and
keeps the file small; every label is escaped.

Colours follow the UI's: slower red, faster green, totals grey; baseline
blue, experimental orange.
"""
from __future__ import annotations

import math
from html import escape

from .model import Report
from .words import MARKS, signed, value

WIDTH = 760
BAR_H, GAP = 18, 6
LABEL_W = 250
# Room right of the longest bar for its value ("−1,234 ms") and for the last tick's, centred on its line.
VALUE_W = 80
# Characters of a waterfall label that fit LABEL_W at 12 px, its mark included: longer ones end in "…",
# the whole label in the bar's tooltip.
LABEL_CHARS = 32
SLOWER, FASTER, TOTAL = "#c62828", "#2e7d32", "#757575"
BASELINE, EXPERIMENTAL = "#1565c0", "#ef6c00"


def waterfall(r: Report) -> str:
    """Horizontal floating bars in ms: one row per bar of `r.waterfall`."""
    bars = r.waterfall
    top = max([max(b.start_us, b.end_us) for b in bars] + [1.0])
    ticks = _ticks(top)
    scale = (WIDTH - LABEL_W - VALUE_W) / ticks[-1]
    height = len(bars) * (BAR_H + GAP) + 30
    out = [_open(height, "Waterfall: the baseline's mean step, each contributor's change, the experimental's mean step")]
    out += _x_axis(ticks, scale, height - 22, lambda v: value(v, "us"))
    for i, b in enumerate(bars):
        y = i * (BAR_H + GAP) + 4
        lo, hi = sorted((b.start_us, b.end_us))
        colour = TOTAL if b.kind == "total" else SLOWER if b.end_us > b.start_us else FASTER
        verdict = MARKS[b.verdict] if b.verdict else ""
        change = value(b.end_us, "us") if b.kind == "total" else signed(b.end_us - b.start_us, "us")
        tip = f"{b.label}: {change}" + (f" ({b.verdict_label})" if b.verdict_label else "")
        out.append(f'<g class="bar" data-kind="{escape(b.kind)}"><title>{escape(tip)}</title>')
        out.append(f'<text x="{LABEL_W - 8}" y="{y + BAR_H - 5}" text-anchor="end">{escape(_short(b.label))} '
                   f'{escape(verdict)}</text>')
        out.append(f'<rect x="{LABEL_W + lo * scale:.1f}" y="{y}" width="{max((hi - lo) * scale, 1.0):.1f}" '
                   f'height="{BAR_H}" fill="{colour}"/>')
        out.append(f'<text x="{LABEL_W + hi * scale + 4:.1f}" y="{y + BAR_H - 5}" class="value">{escape(change)}</text></g>')
    out.append("</svg>")
    return "".join(out)


def trend(r: Report) -> str:
    """Each run's step times (ms) over its profiled steps, one line per run."""
    series = [("baseline", r.step_times.baseline_us, BASELINE), ("experimental", r.step_times.experimental_us,
                                                                   EXPERIMENTAL)]
    n = max(len(s) for _, s, _ in series) or 1
    top = max([v for _, s, _ in series for v in s] + [1.0])
    ticks = _ticks(top)
    plot_h, left = 200, 70
    x_of = lambda i: left + (i + 0.5) * (WIDTH - left - 20) / n  # noqa: E731 - step i's centre
    y_of = lambda v: 10 + plot_h * (1 - v / ticks[-1])  # noqa: E731
    out = [_open(plot_h + 60, "Step time of each profiled step, baseline and experimental")]
    for t in ticks:
        out.append(f'<line x1="{left}" x2="{WIDTH - 20}" y1="{y_of(t):.1f}" y2="{y_of(t):.1f}" class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{y_of(t) + 4:.1f}" text-anchor="end" class="tick">{escape(value(t, "us"))}</text>')
    for name, steps, colour in series:
        points = " ".join(f"{x_of(i):.1f},{y_of(v):.1f}" for i, v in enumerate(steps))
        out.append(f'<g class="series" data-run="{name}"><polyline points="{points}" fill="none" stroke="{colour}" '
                   'stroke-width="2"/>')
        out += [f'<circle cx="{x_of(i):.1f}" cy="{y_of(v):.1f}" r="3.5" fill="{colour}"><title>{name} step {i + 1}: '
                f'{escape(value(v, "us"))}</title></circle>' for i, v in enumerate(steps)]
        out.append("</g>")
    for i in range(n):
        if n <= 20 or i % math.ceil(n / 20) == 0:
            out.append(f'<text x="{x_of(i):.1f}" y="{plot_h + 28}" text-anchor="middle" class="tick">{i + 1}</text>')
    out.append(f'<text x="{left}" y="{plot_h + 50}" class="tick">profiled step</text>')
    for k, (name, _, colour) in enumerate(series):
        x = WIDTH - 260 + k * 130
        out.append(f'<rect x="{x}" y="{plot_h + 40}" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{x + 16}" y="{plot_h + 50}">{name}</text>')
    out.append("</svg>")
    return "".join(out)


def _open(height: int, label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
            f'height="{height}" role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>')


def _x_axis(ticks: list[float], scale: float, y: float, fmt) -> list[str]:
    out = []
    for t in ticks:
        x = LABEL_W + t * scale
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{x:.1f}" y="{y + 16:.1f}" text-anchor="middle" class="tick">{escape(fmt(t))}</text>')
    return out


def _ticks(top: float) -> list[float]:
    """0 and round steps up to at least `top` (1, 2 or 5 times a power of ten)."""
    raw = top / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


def _short(label: str, most: int = LABEL_CHARS) -> str:
    return label if len(label) <= most else label[: most - 1] + "…"
