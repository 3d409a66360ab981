"""Inline SVG plots for the HTML report: horizontal bars, grouped bars, a heat map.

Pure functions from numbers to SVG text; every label is escaped. No external assets, no
JavaScript, so the report is one self-contained file.
"""
from __future__ import annotations

from collections.abc import Sequence
from html import escape

PALETTE = ("#3b6fb6", "#e07b39", "#3a9a5b", "#c2464b", "#7d5ba6", "#8c6d46", "#d16ba5", "#6b7b8c")
FONT = 'font-family="Helvetica, Arial, sans-serif" font-size="12"'
CHAR_W = 7  # a generous average glyph width at that size, for laying out labels


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" {FONT}>'
            f'<title>{escape(title)}</title>{"".join(body)}</svg>')


def _fmt(v: float) -> str:
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}"


def bar_chart(items: Sequence[tuple[str, float]], *, title: str, unit: str = "", width: int = 640) -> str:
    """Horizontal bars, one per (label, value), longest value spanning the plot."""
    label_w, bar_h, gap, top = 190, 20, 6, 28
    plot_w = width - label_w - 60
    height = top + len(items) * (bar_h + gap) + 10
    vmax = max((v for _l, v in items), default=0.0) or 1.0
    body = [f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>']
    for i, (label, value) in enumerate(items):
        y = top + i * (bar_h + gap)
        w = max(1.0, plot_w * value / vmax) if value else 0.0
        body.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{escape(label)}</text>'
                    f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{PALETTE[0]}"/>'
                    f'<text x="{label_w + w + 4:.1f}" y="{y + 14}">{_fmt(value)}{escape(unit)}</text>')
    return _svg(width, height, body, title)


def grouped_bars(groups: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], *, title: str,
                 y_max: float = 100.0, unit: str = "%", width: int = 720,
                 markers: Sequence[float | None] | None = None, marker_label: str = "") -> str:
    """Vertical bars: one cluster per group, one bar per series (None = no bar). Optional `markers`
    (one per group) draw a dashed reference line, e.g. a published figure."""
    left, top, plot_h, bottom = 44, 30, 220, 70
    names = [name for name, _v in series] + ([marker_label] if markers is not None and marker_label else [])
    # as many legend columns as the longest name leaves room for: a long name gets a row of its own
    per_row = max(1, min(3, int((width - left - 10) // (16 + CHAR_W * max((len(n) for n in names), default=1)))))
    legend_h = 18 * ((len(names) + per_row - 1) // per_row)
    height = top + plot_h + bottom + legend_h
    plot_w = width - left - 10
    cluster_w = plot_w / max(1, len(groups))
    bar_w = min(46.0, 0.8 * cluster_w / max(1, len(series)))
    body = [f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>']
    for tick in range(0, 5):
        v = y_max * tick / 4
        y = top + plot_h - plot_h * tick / 4
        body.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#dddddd"/>'
                    f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{_fmt(v)}{escape(unit)}</text>')
    for g, group in enumerate(groups):
        x0 = left + g * cluster_w + (cluster_w - bar_w * len(series)) / 2
        for s, (_name, values) in enumerate(series):
            value = values[g] if g < len(values) else None
            if value is None:
                continue
            h = plot_h * min(max(value, 0.0), y_max) / y_max
            x = x0 + s * bar_w
            body.append(f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                        f'fill="{PALETTE[s % len(PALETTE)]}"/>'
                        f'<text x="{x + bar_w / 2 - 1:.1f}" y="{top + plot_h - h - 3:.1f}" text-anchor="middle" '
                        f'font-size="10">{_fmt(value)}</text>')
        if markers is not None and g < len(markers) and markers[g] is not None:
            y = top + plot_h - plot_h * min(float(markers[g] or 0.0), y_max) / y_max
            body.append(f'<line x1="{left + g * cluster_w + 4:.1f}" x2="{left + (g + 1) * cluster_w - 4:.1f}" '
                        f'y1="{y:.1f}" y2="{y:.1f}" stroke="#222222" stroke-dasharray="5,3"/>')
        body.append(f'<text x="{left + (g + 0.5) * cluster_w:.1f}" y="{top + plot_h + 16}" '
                    f'text-anchor="middle">{escape(group)}</text>')
    body.append(f'<line x1="{left}" x2="{width - 10}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#555555"/>')
    legend = [(name, PALETTE[s % len(PALETTE)], False) for s, (name, _v) in enumerate(series)]
    if markers is not None and marker_label:
        legend.append((marker_label, "#222222", True))
    for i, (name, colour, dashed) in enumerate(legend):
        x = left + (i % per_row) * (plot_w / per_row)
        y = top + plot_h + 36 + 18 * (i // per_row)
        mark = (f'<line x1="{x:.1f}" x2="{x + 12:.1f}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" '
                f'stroke-dasharray="5,3"/>' if dashed else
                f'<rect x="{x:.1f}" y="{y - 10}" width="12" height="12" fill="{colour}"/>')
        room = int((plot_w / per_row - 20) // CHAR_W)
        shown = name if len(name) <= room else name[:max(room - 1, 1)] + "\u2026"
        body.append(f'{mark}<text x="{x + 16:.1f}" y="{y}"><title>{escape(name)}</title>{escape(shown)}</text>')
    return _svg(width, height, body, title)


def heatmap(rows: Sequence[str], cols: Sequence[str], values: Sequence[Sequence[int]], *, title: str,
            marks: set[tuple[int, int]] | None = None, mark_label: str = "") -> str:
    """Cells shaded by count (0 white); `marks` outline cells (e.g. a verified rule -> metric edge)."""
    # Column labels are rotated -55 degrees: room above for their height, to the right for their run.
    longest = max((len(c) for c in cols), default=0)
    cell, left, top = 34, 170, 40 + int(0.82 * CHAR_W * longest)
    width = left + cell * len(cols) + 20 + int(0.58 * CHAR_W * longest)
    height = top + cell * len(rows) + 40
    vmax = max((v for r in values for v in r), default=0) or 1
    body = [f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>']
    for c, col in enumerate(cols):
        x = left + c * cell + cell / 2
        body.append(f'<text transform="translate({x:.1f},{top - 6}) rotate(-55)">{escape(col)}</text>')
    for r, row in enumerate(rows):
        y = top + r * cell
        body.append(f'<text x="{left - 6}" y="{y + cell / 2 + 4:.1f}" text-anchor="end">{escape(row)}</text>')
        for c in range(len(cols)):
            v = values[r][c]
            shade = 1.0 - 0.8 * v / vmax if v else 1.0
            fill = f"rgb({int(59 + (255 - 59) * shade)},{int(111 + (255 - 111) * shade)},{int(182 + (255 - 182) * shade)})"
            outline = "#c2464b" if marks and (r, c) in marks else "#dddddd"
            stroke_w = 2.5 if marks and (r, c) in marks else 1
            body.append(f'<rect x="{left + c * cell}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{fill}" '
                        f'stroke="{outline}" stroke-width="{stroke_w}"/>')
            if v:
                colour = "#ffffff" if shade < 0.5 else "#222222"
                body.append(f'<text x="{left + c * cell + cell / 2 - 1:.1f}" y="{y + cell / 2 + 3:.1f}" '
                            f'text-anchor="middle" fill="{colour}" font-size="11">{v}</text>')
    if marks and mark_label:
        y = top + cell * len(rows) + 22
        body.append(f'<rect x="{left}" y="{y - 11}" width="12" height="12" fill="none" stroke="#c2464b" '
                    f'stroke-width="2.5"/><text x="{left + 18}" y="{y}">{escape(mark_label)}</text>')
    return _svg(width, height, body, title)
