"""A plotly figure as static, script-free SVG: the copy of a view that shows
wherever HTML shows (GitHub's notebook renderer, nbconvert's HTML offline,
an e-mail), drawn by this module from the figure's JSON alone: no plotly.js,
no kaleido, no browser, no network, and no plotly import.

It draws what ncclnb's figure builders use: heatmaps (z, x, y, cell text
from ``texttemplate``, colour scales with steps, ``zmin``/``zmax``, a colour
bar or a list of colour classes), scatter traces (markers, lines, text),
bars, the title, axis titles and tick labels (categorical and numeric,
``autorange="reversed"``, ``tickvals``/``ticktext``), rect and line shapes,
annotations and a legend. Hover text becomes an SVG ``<title>`` per cell or
marker (a browser tooltip) up to TITLE_BUDGET of them; past MAX_CELLS cells
or MAX_POINTS points a trace is drawn strided, and past MAX_BYTES the figure
is replaced by a note, so the copy stays small. A trace type it does not
draw, or a figure it cannot read, gives a one-line note saying the figure is
interactive-only, never an exception.

Every string is escaped (text from logs and hostnames may hold markup);
plotly's rich-text subset (``<br>``, ``<b>``, ``<i>``, ``<span style>``, and
entities) becomes ``<tspan>``; other tags are dropped. Styling uses
presentation attributes only (no ``<style>``, no ids), so a sanitiser that
keeps SVG keeps the picture.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any, Iterable, Optional

from ._common import esc, esc_attr

DEFAULT_WIDTH = 820  # px, when the layout gives none (plotly's own default is the container's width)
DEFAULT_HEIGHT = 450  # px, plotly's default
TITLE_BUDGET = 1_500  # per-cell / per-marker <title> tooltips in one figure; past that, none
TITLE_CHARS = 600  # characters of one tooltip
MAX_CELLS = 12_000  # heatmap cells drawn one by one; more: every k-th row and column
MAX_POINTS = 5_000  # scatter points drawn; more: every k-th
MAX_BYTES = 3_000_000  # past this the SVG is replaced by a note
FONT = "'Open Sans', Verdana, Arial, sans-serif"
CHAR_W = 0.6  # average glyph width / font size (Verdana-like, a little generous)
LINE_H = 1.3  # line height / font size
SUPPORTED = ("heatmap", "scatter", "scattergl", "bar")
_SCALE_STEPS = 32  # rects in a continuous colour bar


class _Unsupported(Exception):
    pass


# --- entry points ---------------------------------------------------------------


def figure_svg(fig: Any) -> str:
    """``fig`` (a plotly Figure, or its ``to_plotly_json()`` dict) as one
    ``<svg>`` element. Never raises: what it cannot draw gives a note."""
    try:
        data = _as_dict(fig)
    except Exception as exc:  # a figure that cannot even be read
        return note_svg(f"figure not readable ({type(exc).__name__})")
    try:
        out = _Figure(data).render()
    except _Unsupported as exc:
        return note_svg(str(exc))
    except Exception as exc:  # a shape of figure not foreseen: a note, never a broken page
        return note_svg(f"static copy failed ({type(exc).__name__})")
    if len(out) > MAX_BYTES:
        return note_svg(f"too large for a static copy ({len(out) // 1000} kB)")
    return out


def note_svg(reason: str) -> str:
    """The one-line SVG that stands in for a figure that has no static copy."""
    text = f"This figure is interactive-only: {reason}. Run the notebook to see it."
    w = int(len(text) * 12 * CHAR_W) + 20
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ncclnb-figure ncclnb-figure-note" width="{w}" '
        f'height="24" viewBox="0 0 {w} 24" font-family="{esc_attr(FONT)}" style="max-width:100%;height:auto">'
        f'<text x="4" y="16" font-size="12" font-style="italic" fill="#636363">{esc(_clean(text))}</text></svg>'
    )


def _as_dict(fig: Any) -> dict:
    if hasattr(fig, "to_plotly_json"):
        fig = fig.to_plotly_json()
    if not isinstance(fig, dict) or not isinstance(fig.get("data", ()), (list, tuple)):
        raise TypeError("not a figure")
    return {"data": list(fig.get("data") or ()), "layout": dict(fig.get("layout") or {})}


# --- small helpers ----------------------------------------------------------------

_BAD_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: object) -> str:
    """A string safe in XML 1.0 (control characters and lone surrogates replaced)."""
    return _BAD_CHARS.sub("\ufffd", "" if text is None else str(text))


def _f(v: float) -> str:
    """A coordinate, short."""
    r = round(float(v), 1)
    return str(int(r)) if r == int(r) else str(r)


def _get(d: Any, *path, default=None):
    for key in path:
        if not isinstance(d, dict) or key not in d or d[key] is None:
            return default
        d = d[key]
    return d


def _num(v) -> Optional[float]:
    if isinstance(v, bool) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _list(v) -> list:
    if v is None:
        return []
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, (str, bytes, dict)):
        return [v]
    try:
        return list(v)
    except TypeError:
        return [v]


def _matrix(v) -> list[list]:
    rows = _list(v)
    if rows and not isinstance(rows[0], (list, tuple)) and not hasattr(rows[0], "tolist"):
        return [rows]
    return [_list(r) for r in rows]


# --- colours ----------------------------------------------------------------------

_NAMED = {
    "white": (255, 255, 255),
    "black": (0, 0, 0),
    "red": (255, 0, 0),
    "green": (0, 128, 0),
    "blue": (0, 0, 255),
    "grey": (128, 128, 128),
    "gray": (128, 128, 128),
    "orange": (255, 165, 0),
    "yellow": (255, 255, 0),
    "purple": (128, 0, 128),
    "lightgrey": (211, 211, 211),
    "lightgray": (211, 211, 211),
    "darkgrey": (169, 169, 169),
    "darkgray": (169, 169, 169),
}
_SAFE_COLOUR = re.compile(r"^(?:[a-zA-Z]{1,30}|hsla?\([0-9.,%\s]{1,40}\))$")  # a CSS name or hsl(); never url()


def _rgb(colour: object) -> Optional[tuple[float, float, float, float]]:
    """'#abc', '#aabbcc', 'rgb(...)', 'rgba(...)' or a few names -> (r, g, b, a)."""
    if not isinstance(colour, str):
        return None
    c = colour.strip().lower()
    if c.startswith("#") and len(c) in (4, 7):
        try:
            if len(c) == 4:
                return tuple(int(ch * 2, 16) for ch in c[1:]) + (1.0,)
            return (int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16), 1.0)
        except ValueError:
            return None
    m = re.match(r"^rgba?\(([^)]*)\)$", c)
    if m:
        parts = [p.strip() for p in m.group(1).split(",")]
        try:
            nums = [float(p.rstrip("%")) for p in parts]
        except ValueError:
            return None
        if len(nums) == 3:
            return (nums[0], nums[1], nums[2], 1.0)
        if len(nums) == 4:
            return (nums[0], nums[1], nums[2], nums[3])
        return None
    if c in _NAMED:
        return _NAMED[c] + (1.0,)
    return None


def _hex(rgb) -> str:
    return "#%02x%02x%02x" % tuple(max(0, min(255, int(round(v)))) for v in rgb[:3])


def _colour(value: object, default: str = "#444444") -> str:
    """A colour for an attribute: normalised to #rrggbb where it can be read,
    else the value itself when it is harmless CSS, else ``default``."""
    rgb = _rgb(value)
    if rgb is not None:
        if rgb[3] <= 0:
            return "none"
        if rgb[3] < 1:
            return "rgba(%d,%d,%d,%s)" % (*(max(0, min(255, int(round(v)))) for v in rgb[:3]), _f(rgb[3]))
        return _hex(rgb)
    if isinstance(value, str) and _SAFE_COLOUR.match(value.strip()):
        return value.strip()
    return default


def _luminance(colour: str) -> float:
    rgb = _rgb(colour) or (255, 255, 255, 1)

    def ch(v):
        v = v / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * ch(rgb[0]) + 0.7152 * ch(rgb[1]) + 0.0722 * ch(rgb[2])


def _contrast_text(fill: str) -> str:
    return "#ffffff" if _luminance(fill) < 0.22 else "#222222"


class _Scale:
    """A plotly colour scale ([[pos, colour], ...]) between zmin and zmax."""

    def __init__(self, scale, zmin: float, zmax: float, reverse: bool = False):
        stops = []
        for item in _list(scale):
            try:
                pos, col = item[0], item[1]
            except (TypeError, IndexError, KeyError):
                continue
            p, rgb = _num(pos), _rgb(col)
            if p is not None and rgb is not None:
                stops.append((p, rgb))
        if len(stops) < 2:
            stops = [(0.0, (13, 8, 135, 1.0)), (1.0, (240, 249, 33, 1.0))]
        if reverse:
            stops = [(1 - p, c) for p, c in reversed(stops)]
        self.stops = stops
        self.zmin, self.zmax = zmin, zmax
        # a step scale: every colour holds over a band (pairs of stops of one colour)
        self.stepped = len(stops) % 2 == 0 and all(stops[i][1] == stops[i + 1][1] for i in range(0, len(stops), 2))

    def at(self, t: float) -> str:
        stops = self.stops
        t = max(stops[0][0], min(stops[-1][0], t))
        for (p0, c0), (p1, c1) in zip(stops, stops[1:]):
            if p0 <= t <= p1:
                if c0 == c1 or p1 <= p0:
                    return _hex(c0)
                u = (t - p0) / (p1 - p0)
                return _hex(tuple(a + (b - a) * u for a, b in zip(c0, c1)))
        return _hex(stops[-1][1])

    def colour(self, z: float) -> str:
        span = self.zmax - self.zmin
        return self.at(0.5 if span <= 0 else (z - self.zmin) / span)


# --- plotly rich text -> SVG ------------------------------------------------------

_TAG = re.compile(r"<(/?)([a-zA-Z]+)([^<>]*)>")


def _runs(text: object) -> list[list[tuple[str, dict]]]:
    """Plotly's text subset -> lines of (text, style) runs, text unescaped."""
    s = _clean(text)
    lines: list[list[tuple[str, dict]]] = [[]]
    stack: list[tuple[str, dict]] = [("", {})]
    pos = 0
    for m in _TAG.finditer(s):
        if m.start() > pos:
            lines[-1].append((html.unescape(s[pos : m.start()]), stack[-1][1]))
        pos = m.end()
        closing, name, attrs = m.group(1), m.group(2).lower(), m.group(3)
        if name == "br":
            lines.append([])
            continue
        if closing:
            if any(n == name for n, _ in stack[1:]):
                while stack[-1][0] != name:
                    stack.pop()
                stack.pop()
            continue
        style = dict(stack[-1][1])
        if name in ("b", "strong"):
            style["bold"] = True
        elif name in ("i", "em"):
            style["italic"] = True
        elif name == "span":
            size = re.search(r"font-size:\s*([0-9.]+)px", attrs)
            if size and _num(size.group(1)):
                style["size"] = float(size.group(1))
            colour = re.search(r"(?<![-\w])color:\s*([#\w(),.\s]+?)\s*(?:;|['\"]|$)", attrs)
            if colour:
                style["color"] = _colour(colour.group(1), style.get("color", ""))
        elif name in ("sub", "sup", "a"):
            pass
        else:
            continue  # an unknown tag is dropped, and not pushed
        if not attrs.rstrip().endswith("/"):
            stack.append((name, style))
    if pos < len(s):
        lines[-1].append((html.unescape(s[pos:]), stack[-1][1]))
    return lines


def plain(text: object, limit: int = TITLE_CHARS) -> str:
    """Plotly rich text as plain text (lines joined by newlines), shortened."""
    out = "\n".join("".join(t for t, _ in line) for line in _runs(text)).strip()
    return out if len(out) <= limit else out[: limit - 1] + "…"


def _join(lines) -> list[tuple[str, dict]]:
    """Rich-text lines as one line, the breaks become spaces."""
    out: list[tuple[str, dict]] = []
    for k, line in enumerate(lines):
        if k and out:
            out.append((" ", {}))
        out.extend(line)
    return out


def _width(lines, size: float) -> float:
    best = 0.0
    for line in lines:
        w = sum(len(t) * st.get("size", size) * (CHAR_W + (0.06 if st.get("bold") else 0)) for t, st in line)
        best = max(best, w)
    return best


def _height(lines, size: float) -> float:
    return sum(max([size] + [st.get("size", size) for _, st in line]) * LINE_H for line in lines)


def _text(
    lines,
    x: float,
    y: float,
    size: float,
    anchor: str = "start",
    valign: str = "middle",
    colour: str = "#2a3f5f",
    extra: str = "",
    rotate: Optional[float] = None,
) -> str:
    """``<text>`` of rich-text lines; (x, y) is the anchor point, ``valign``
    one of top / middle / bottom of the block."""
    lines = [line for line in lines] or [[]]
    heights = [max([size] + [st.get("size", size) for _, st in line]) * LINE_H for line in lines]
    block = sum(heights)
    top = y if valign == "top" else (y - block if valign == "bottom" else y - block / 2)
    parts = []
    cur = top
    for i, (line, h) in enumerate(zip(lines, heights)):
        base = cur + h * 0.77
        cur += h
        runs = []
        for t, st in line:
            if not t:
                continue
            attrs = ""
            if st.get("bold"):
                attrs += ' font-weight="bold"'
            if st.get("italic"):
                attrs += ' font-style="italic"'
            if st.get("size"):
                attrs += f' font-size="{_f(st["size"])}"'
            if st.get("color"):
                attrs += f' fill="{esc_attr(st["color"])}"'
            runs.append(f"<tspan{attrs}>{esc(t)}</tspan>" if attrs else esc(t))
        parts.append(f'<tspan x="{_f(x)}" y="{_f(base)}">{"".join(runs) or " "}</tspan>')
    transform = f' transform="rotate({_f(rotate)} {_f(x)} {_f(y)})"' if rotate else ""
    return (
        f'<text font-size="{_f(size)}" text-anchor="{anchor}" fill="{esc_attr(colour)}"{transform}{extra}>'
        + "".join(parts)
        + "</text>"
    )


def _title_el(text: str) -> str:
    return f"<title>{esc(text)}</title>" if text else ""


_FIELD = re.compile(r"%\{([\w.\[\]]+)(?::([^}]*))?\}")


def _template(tpl: str, fields: dict) -> str:
    """A plotly text/hover template with the fields of one cell or point."""
    tpl = re.sub(r"<extra>.*?</extra>", "", _clean(tpl), flags=re.S)

    def sub(m):
        value = fields.get(m.group(1))
        if value is None:
            return ""
        spec = (m.group(2) or "").strip()
        if spec and _num(value) is not None:
            try:
                return format(float(value), spec.replace("~", ""))
            except (ValueError, TypeError):
                pass
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return str(value)

    return _FIELD.sub(sub, tpl)


# --- axes -------------------------------------------------------------------------


def _nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    if hi < lo:
        lo, hi = hi, lo
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    out, v = [], start
    while v <= hi + step * 1e-9 and len(out) < 50:
        out.append(round(v, 10))
        v += step
    return out


def _fmt_num(v: float) -> str:
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.4g}"


class _Axis:
    def __init__(self, spec: dict, letter: str):
        self.spec = spec or {}
        self.letter = letter
        self.categories: list = []
        self._cat_index: dict = {}
        self.numbers: list[float] = []
        self.lo = self.hi = None  # data extent, in axis units
        self.a = self.b = 0.0  # range: a maps to the left / bottom, b to the right / top

    @property
    def categorical(self) -> bool:
        kind = self.spec.get("type")
        if kind == "category":
            return True
        if kind in ("linear", "log"):
            return False
        return bool(self.categories)

    def add_values(self, values: Iterable, pad: float = 0.0):
        for v in values:
            if v is None:
                continue
            if isinstance(v, str) and _num(v) is None:
                key = v
                if key not in self._cat_index and len(self._cat_index) < 100_000:
                    self._cat_index[key] = len(self.categories)
                    self.categories.append(key)
                continue
            x = _num(v)
            if x is not None:
                self.extend(x - pad, x + pad)

    def extend(self, lo: float, hi: float):
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)

    def pos(self, v) -> Optional[float]:
        """A data value -> axis units (category index on a categorical axis)."""
        if v is None:
            return None
        if isinstance(v, str) and v in self._cat_index:
            return float(self._cat_index[v])
        return _num(v)

    def finish(self, pad_fraction: float):
        rng = self.spec.get("range")
        if isinstance(rng, (list, tuple)) and len(rng) == 2 and _num(rng[0]) is not None and _num(rng[1]) is not None:
            self.a, self.b = float(rng[0]), float(rng[1])
        else:
            lo, hi = self.lo, self.hi
            if self.categorical:
                lo = -0.5 if lo is None else min(lo, -0.5)
                hi = len(self.categories) - 0.5 if hi is None else max(hi, len(self.categories) - 0.5)
            elif lo is None:
                lo, hi = -1.0, 1.0
            else:
                span = hi - lo
                pad = span * pad_fraction if span > 0 else 1.0
                lo, hi = lo - pad, hi + pad
            self.a, self.b = lo, hi
            if self.spec.get("autorange") == "reversed":
                self.a, self.b = self.b, self.a
        if self.a == self.b:
            self.b = self.a + 1

    def ticks(self) -> list[tuple[float, str]]:
        if self.spec.get("visible") is False or self.spec.get("showticklabels") is False:
            return []
        vals, texts = self.spec.get("tickvals"), self.spec.get("ticktext")
        if vals is not None and self.spec.get("tickmode") != "auto":
            vals, texts = _list(vals), _list(texts)
            out = []
            for i, v in enumerate(vals):
                p = self.pos(v)
                if p is None:
                    continue
                label = texts[i] if i < len(texts) and texts[i] is not None else (v if isinstance(v, str) else _fmt_num(p))
                out.append((p, str(label)))
            return out
        if self.categorical:
            return [(float(i), esc(c)) for i, c in enumerate(self.categories)]
        return [(v, _fmt_num(v)) for v in _nice_ticks(min(self.a, self.b), max(self.a, self.b))]

    def title(self) -> str:
        t = self.spec.get("title")
        return str(_get(t, "text", default="") if isinstance(t, dict) else (t or ""))


# --- the figure ---------------------------------------------------------------------


class _Figure:
    def __init__(self, fig: dict):
        self.layout = fig["layout"]
        self.traces = [t for t in fig["data"] if isinstance(t, dict) and t.get("visible", True) not in (False, "legendonly")]
        for t in self.traces:
            kind = t.get("type", "scatter")
            if kind not in SUPPORTED:
                raise _Unsupported(f"{_clean(kind)[:40]} traces have no static copy")
        template = _get(self.layout, "template", default={}) or {}
        self.tlayout = template.get("layout", {}) if isinstance(template, dict) else {}
        self.tdata = template.get("data", {}) if isinstance(template, dict) else {}
        self.colorway = _list(self.layout.get("colorway") or self.tlayout.get("colorway")) or [
            "#636efa",
            "#EF553B",
            "#00cc96",
            "#ab63fa",
            "#FFA15A",
            "#19d3f3",
        ]
        self.font_colour = _colour(_get(self.layout, "font", "color") or _get(self.tlayout, "font", "color"), "#2a3f5f")
        self.font_size = _num(_get(self.layout, "font", "size")) or 12
        self.titles_left = TITLE_BUDGET
        self.notes: list[str] = []
        self.x = _Axis(self.layout.get("xaxis") or {}, "x")
        self.y = _Axis(self.layout.get("yaxis") or {}, "y")

    # ---- data extents
    def _extents(self):
        for t in self.traces:
            kind = t.get("type", "scatter")
            if kind == "heatmap":
                z = _matrix(t.get("z"))
                rows = len(z)
                cols = max((len(r) for r in z), default=0)
                for axis, key, n in ((self.x, "x", cols), (self.y, "y", rows)):
                    vals = _list(t.get(key))
                    if vals:
                        axis.add_values(vals[:n])
                        nums = [axis.pos(v) for v in vals[:n]]
                        nums = [v for v in nums if v is not None]
                        if nums and not axis.categorical:
                            step = _step(nums)
                            axis.extend(min(nums) - step / 2, max(nums) + step / 2)
                    elif n:
                        axis.extend(-0.5, n - 0.5)
            elif kind == "bar":
                horizontal = t.get("orientation") == "h"
                cats, vals = (self.y, self.x) if horizontal else (self.x, self.y)
                cvals = _list(t.get("y" if horizontal else "x"))
                nvals = _list(t.get("x" if horizontal else "y"))
                if not cvals:
                    cvals = list(range(len(nvals)))
                cats.add_values(cvals, pad=0.5)
                nums = [_num(v) for v in nvals]
                nums = [v for v in nums if v is not None]
                vals.extend(min(nums + [0.0]), max(nums + [0.0]))
            else:
                xs, ys = _list(t.get("x")), _list(t.get("y"))
                if not xs and ys:
                    xs = list(range(len(ys)))
                self.x.add_values(xs)
                self.y.add_values(ys)
        for axis in (self.x, self.y):
            axis.finish(0.06)

    # ---- geometry
    def _geometry(self):
        L = self.layout
        self.W = float(_num(L.get("width")) or DEFAULT_WIDTH)
        H0 = float(_num(L.get("height")) or DEFAULT_HEIGHT)
        m = L.get("margin") or {}
        ml, mr = _num(m.get("l")), _num(m.get("r"))
        mt, mb = _num(m.get("t")), _num(m.get("b"))
        ml = 80.0 if ml is None else ml
        mr = 80.0 if mr is None else mr
        mt = 100.0 if mt is None else mt
        mb = 80.0 if mb is None else mb
        ph = max(60.0, H0 - mt - mb)

        title = _get(L, "title", "text", default="") if isinstance(L.get("title"), dict) else (L.get("title") or "")
        self.title_size = _num(_get(L, "title", "font", "size")) or 17
        self.title_lines = _runs(title) if title else []
        title_h = (_height(self.title_lines, self.title_size) + 14) if title else 8

        tick_size = lambda ax: _num(_get(ax.spec, "tickfont", "size")) or self.font_size  # noqa: E731
        self.xtick_size, self.ytick_size = tick_size(self.x), tick_size(self.y)
        self.xticks = [(p, _runs(t)) for p, t in self.x.ticks()]
        self.yticks = [(p, _runs(t)) for p, t in self.y.ticks()]
        self.xtitle, self.ytitle = self.x.title(), self.y.title()

        ylab_w = max([_width(r, self.ytick_size) for _, r in self.yticks] + [0]) + (8 if self.yticks else 0)
        left = max(ml, ylab_w + (self.font_size * LINE_H + 6 if self.ytitle else 0) + 6)
        right_items = self._right_items()
        right = max(mr, right_items + 10 if right_items else 0)
        pw = max(100.0, self.W - left - right)
        if not _num(L.get("width")):
            self.W = left + pw + right
        # x tick labels: at the figure's tickangle where it gives one (as plotly
        # draws them), else straight when they fit between ticks, else slanted
        spacing = pw / max(1, len(self.xticks))
        xlab_w = max([_width(r, self.xtick_size) for _, r in self.xticks] + [0])
        angle = _num(self.x.spec.get("tickangle"))
        self.angle = -45.0 if angle is None else angle
        self.slant = bool(self.xticks) and (xlab_w > spacing * 0.95 if angle is None else angle != 0)
        if self.slant:  # one line each, slanted: "NIC0<br>mlx5_0" reads "NIC0 mlx5_0"
            self.xticks = [(p, [_join(r)]) for p, r in self.xticks]
            xlab_w = max(_width(r, self.xtick_size) for _, r in self.xticks)
            if angle is None:
                xlab_h = xlab_w * 0.72 + self.xtick_size * 1.2 + 6
            else:
                turn = math.radians(angle)
                xlab_h = xlab_w * abs(math.sin(turn)) + self.xtick_size * 1.2 * abs(math.cos(turn)) + 6
        else:
            xlab_h = max([_height(r, self.xtick_size) for _, r in self.xticks] + [0]) + (6 if self.xticks else 0)
        xt_h = (self.font_size * LINE_H + 6) if self.xtitle else 0
        self.xside = self.x.spec.get("side", "bottom")
        top_need = title_h + (xlab_h + xt_h if self.xside == "top" else 0)
        bottom_need = (xlab_h + xt_h if self.xside != "top" else 0) + 6
        legend_h = self._legend_below_height(pw)
        top = max(mt, top_need)
        bottom = max(mb if self.xside != "top" else min(mb, 40), bottom_need) + legend_h
        self.left, self.top, self.pw, self.ph = left, top, pw, ph
        self.H = top + ph + bottom
        self.title_h = title_h

    def px(self, v: float) -> float:
        ax = self.x
        return self.left + (v - ax.a) / (ax.b - ax.a) * self.pw

    def py(self, v: float) -> float:
        ax = self.y
        return self.top + self.ph - (v - ax.a) / (ax.b - ax.a) * self.ph

    def ref_x(self, v, ref) -> Optional[float]:
        ref = ref or "x"
        if str(ref).startswith("paper") or str(ref).endswith("domain"):
            n = _num(v)
            return None if n is None else self.left + n * self.pw
        p = self.x.pos(v)
        return None if p is None else self.px(p)

    def ref_y(self, v, ref) -> Optional[float]:
        ref = ref or "y"
        if str(ref).startswith("paper") or str(ref).endswith("domain"):
            n = _num(v)
            return None if n is None else self.top + self.ph - n * self.ph
        p = self.y.pos(v)
        return None if p is None else self.py(p)

    # ---- colour bar and legend (sizes)
    def _colorbars(self) -> list[tuple[dict, _Scale]]:
        out = []
        for t in self.traces:
            if t.get("type") != "heatmap" or t.get("showscale") is False:
                continue
            out.append((t, self._heat_scale(t)))
        return out[:1]

    def _legend_traces(self) -> list[dict]:
        items = []
        for t in self.traces:
            kind = t.get("type", "scatter")
            default = kind != "heatmap"
            if t.get("showlegend", default) and t.get("name"):
                items.append(t)
        show = self.layout.get("showlegend")
        if show is None:
            show = len(items) > 1
        return items[:40] if show else []

    def _legend_horizontal(self) -> bool:
        return _get(self.layout, "legend", "orientation") == "h"

    def _right_items(self) -> float:
        w = 0.0
        bars = self._colorbars()
        if bars:
            trace, scale = bars[0]
            labels = [lab for _, lab in self._colorbar_ticks(trace, scale)]
            title = _get(trace, "colorbar", "title", "text", default="")
            w = 30 + max([_width(_runs(x), 11) for x in labels] + [_width(_runs(title), 12) - 20, 20])
        if self._legend_traces() and not self._legend_horizontal():
            names = [t.get("name") for t in self._legend_traces()]
            title = _get(self.layout, "legend", "title", "text", default="")
            w += 14 + 28 + max([_width(_runs(n), 12) for n in names] + [_width(_runs(title), 12) - 28])
        return w

    def _legend_below_height(self, pw: float) -> float:
        if not (self._legend_traces() and self._legend_horizontal()):
            return 0.0
        rows, x = 1, 0.0
        for t in self._legend_traces():
            w = 46 + _width(_runs(t.get("name")), 12)
            if x + w > pw and x > 0:
                rows, x = rows + 1, 0.0
            x += w
        return rows * 20 + 10

    # ---- traces
    def _heat_scale(self, t: dict) -> _Scale:
        z = [v for row in _matrix(t.get("z")) for v in (_num(c) for c in row) if v is not None]
        zmin, zmax = _num(t.get("zmin")), _num(t.get("zmax"))
        if zmin is None:
            zmin = min(z) if z else 0.0
        if zmax is None:
            zmax = max(z) if z else 1.0
        scale = t.get("colorscale")
        if not scale or isinstance(scale, str):
            scale = _get(self.tdata, "heatmap", default=[{}])
            scale = (scale[0] if isinstance(scale, list) and scale else {}).get("colorscale")
        return _Scale(scale, zmin, zmax, bool(t.get("reversescale")))

    def _take_titles(self, n: int) -> bool:
        if n > self.titles_left:
            self.titles_left = 0
            return False
        self.titles_left -= n
        return True

    def _heatmap(self, t: dict) -> str:
        z = _matrix(t.get("z"))
        if not z:
            return ""
        rows, cols = len(z), max(len(r) for r in z)
        scale = self._heat_scale(t)
        xs, ys = _list(t.get("x")), _list(t.get("y"))
        xpos = [self.x.pos(v) for v in xs[:cols]] if xs else list(map(float, range(cols)))
        ypos = [self.y.pos(v) for v in ys[:rows]] if ys else list(map(float, range(rows)))
        xpos += [None] * (cols - len(xpos))
        ypos += [None] * (rows - len(ypos))
        xedges, yedges = _edges(xpos), _edges(ypos)
        stride = max(1, math.ceil(math.sqrt(rows * cols / MAX_CELLS)))
        if stride > 1:
            self.notes.append(f"{rows}×{cols} cells: every {stride}th row and column drawn; run the notebook for all")
        text = _matrix(t.get("text")) if t.get("text") is not None else []
        hover = _matrix(t.get("hovertext")) if t.get("hovertext") is not None else []
        texttemplate = t.get("texttemplate") or ""
        hovertemplate = t.get("hovertemplate") or ""
        hoverinfo = str(t.get("hoverinfo") or "")
        drawn = (-(-rows // stride)) * (-(-cols // stride))
        titles = hoverinfo not in ("skip", "none") and stride == 1 and self._take_titles(drawn)
        xgap, ygap = _num(t.get("xgap")) or 0.0, _num(t.get("ygap")) or 0.0
        tsize = _num(_get(t, "textfont", "size")) or self.font_size
        tcolour = _get(t, "textfont", "color")
        cell_tpl = texttemplate if stride == 1 else ""
        out = ['<g class="heatmap">']
        for i in range(0, rows, stride):
            if ypos[i] is None:
                continue
            y0, y1 = self.py(yedges[i][0]), self.py(yedges[min(rows - 1, i + stride - 1)][1])
            top, h = min(y0, y1) + ygap / 2, abs(y1 - y0) - ygap
            row = z[i]
            for j in range(0, cols, stride):
                if j >= len(row) or xpos[j] is None:
                    continue
                v = _num(row[j])
                if v is None:
                    continue
                x0, x1 = self.px(xedges[j][0]), self.px(xedges[min(cols - 1, j + stride - 1)][1])
                left, w = min(x0, x1) + xgap / 2, abs(x1 - x0) - xgap
                if w <= 0 or h <= 0:
                    continue
                fill = scale.colour(v)
                fields = None
                tip = ""
                if titles:
                    fields = _cell_fields(xs, ys, z, text, hover, i, j)
                    if hovertemplate:
                        tip = plain(_template(hovertemplate, fields))
                    else:
                        tip = plain(
                            fields.get("hovertext")
                            or fields.get("text")
                            or f"{fields.get('x')}, {fields.get('y')}: {fields.get('z')}"
                        )
                rect = f'<rect x="{_f(left)}" y="{_f(top)}" width="{_f(w)}" height="{_f(h)}" fill="{fill}"'
                out.append(rect + (f">{_title_el(tip)}</rect>" if tip else "/>"))
                if cell_tpl:
                    fields = fields or _cell_fields(xs, ys, z, text, hover, i, j)
                    lines = _runs(_template(cell_tpl, fields))
                    if any(t_ for line in lines for t_, _ in line):
                        size = _fit(lines, tsize, w - 2, h - 2)
                        if size:
                            colour = _colour(tcolour, "") if tcolour and tcolour != "auto" else _contrast_text(fill)
                            out.append(
                                _text(
                                    lines,
                                    left + w / 2,
                                    top + h / 2,
                                    size,
                                    "middle",
                                    "middle",
                                    colour,
                                    extra=' pointer-events="none"',
                                )
                            )
        out.append("</g>")
        return "".join(out)

    def _bar(self, t: dict, k: int, nbars: int) -> str:
        horizontal = t.get("orientation") == "h"
        cats = _list(t.get("y" if horizontal else "x"))
        vals = _list(t.get("x" if horizontal else "y"))
        if not cats:
            cats = list(range(len(vals)))
        colour = _get(t, "marker", "color")
        colours = _list(colour) if isinstance(colour, (list, tuple)) else None
        base = _colour(colour if not colours else None, self.colorway[k % len(self.colorway)]) if not colours else None
        hover = _list(t.get("hovertext")) or _list(t.get("text"))
        titles = self._take_titles(len(vals))
        width = 0.8 / max(1, nbars)
        out = ['<g class="bars">']
        for i, (c, v) in enumerate(zip(cats, vals)):
            n = _num(v)
            cax, vax = (self.y, self.x) if horizontal else (self.x, self.y)
            p = cax.pos(c)
            if n is None or p is None:
                continue
            p = p - 0.4 + width * (k + 0.5)
            if horizontal:
                xa, xb = self.px(0), self.px(n)
                ya, yb = self.py(p - width / 2), self.py(p + width / 2)
            else:
                xa, xb = self.px(p - width / 2), self.px(p + width / 2)
                ya, yb = self.py(0), self.py(n)
            fill = _colour(colours[i % len(colours)], "#636efa") if colours else base
            tip = (
                plain(hover[i])
                if titles and i < len(hover) and hover[i] is not None
                else (f"{c}: {_fmt_num(n)}" if titles else "")
            )
            out.append(
                f'<rect x="{_f(min(xa, xb))}" y="{_f(min(ya, yb))}" width="{_f(abs(xb - xa))}" '
                f'height="{_f(abs(yb - ya))}" fill="{fill}">{_title_el(tip)}</rect>'
            )
        out.append("</g>")
        return "".join(out)

    def _scatter(self, t: dict, k: int) -> str:
        xs, ys = _list(t.get("x")), _list(t.get("y"))
        if not xs and ys:
            xs = list(range(len(ys)))
        n = min(len(xs), len(ys))
        mode = str(t.get("mode") or ("lines+markers" if n < 20 else "lines"))
        default = self.colorway[k % len(self.colorway)]
        out = ['<g class="scatter">']
        if "lines" in mode:
            lc = _colour(_get(t, "line", "color") or default, default)
            lw = _num(_get(t, "line", "width"))
            lw = 2.0 if lw is None else lw
            dash = _dash(_get(t, "line", "dash"), lw)
            segments, cur = [], []
            for i in range(n):
                px = self.x.pos(xs[i])
                py = self.y.pos(ys[i])
                if px is None or py is None:
                    if len(cur) > 1:
                        segments.append(cur)
                    cur = []
                    continue
                cur.append(f"{_f(self.px(px))},{_f(self.py(py))}")
            if len(cur) > 1:
                segments.append(cur)
            if segments:
                d = "".join("M" + "L".join(seg) for seg in segments[:MAX_POINTS])
                out.append(f'<path d="{d}" fill="none" stroke="{lc}" stroke-width="{_f(lw)}"{dash}/>')
        stride = max(1, math.ceil(n / MAX_POINTS))
        if stride > 1:
            self.notes.append(f"{n} points: every {stride}th drawn; run the notebook for all")
        marker = t.get("marker") or {}
        texts = _list(t.get("text")) if "text" in mode else []
        hovers = _list(t.get("hovertext")) or _list(t.get("text"))
        hoverinfo = str(t.get("hoverinfo") or "")
        titles = hoverinfo not in ("skip", "none") and bool(hovers) and self._take_titles(-(-n // stride))
        tpos = str(t.get("textposition") or "middle center")
        tsize = _num(_get(t, "textfont", "size")) or self.font_size
        tcol = _get(t, "textfont", "color")
        room = self._label_room(xs, ys, n, stride) if texts and tpos[:3] in ("bot", "top") else {}
        for i in range(0, n, stride):
            px, py = self.x.pos(xs[i]), self.y.pos(ys[i])
            if px is None or py is None:
                continue
            cx, cy = self.px(px), self.py(py)
            size = _num(_pick(marker.get("size"), i)) or 6.0
            if "markers" in mode:
                fill = _colour(_pick(marker.get("color"), i) or default, default)
                tip = plain(hovers[i]) if titles and i < len(hovers) and hovers[i] is not None else ""
                out.append(
                    _marker(
                        _pick(marker.get("symbol"), i) or "circle",
                        cx,
                        cy,
                        size,
                        fill,
                        _colour(_get(marker, "line", "color"), "#444444"),
                        _num(_get(marker, "line", "width")) or 0.0,
                        tip,
                        _num(marker.get("opacity")) or 1.0,
                    )
                )
            if texts and i < len(texts) and texts[i] not in (None, ""):
                lines = _runs(texts[i])
                colour = _colour(_pick(tcol, i), self.font_colour) if tcol else self.font_colour
                half = size / 2 if "markers" in mode else 0
                if tpos[:3] in ("bot", "top"):
                    # labels under (over) markers in a row: smaller to fit between neighbours,
                    # every other one a line lower (higher) where even 7 px would not fit
                    fit = _fit(lines, tsize, room.get(i, 1e9) - 2, 1e9)
                    size_t, shift = (fit, 0.0) if fit and fit >= 7 else (min(tsize, 7.0), 0.0)
                    if not (fit and fit >= 7) and (i // stride) % 2:
                        shift = size_t * LINE_H
                    if tpos.startswith("bot"):
                        el = _text(lines, cx, cy + half + 2 + shift, size_t, "middle", "top", colour)
                    else:
                        el = _text(lines, cx, cy - half - 2 - shift, size_t, "middle", "bottom", colour)
                else:
                    anchor = "start" if tpos.endswith("right") else ("end" if tpos.endswith("left") else "middle")
                    dx = half + 2 if anchor == "start" else (-half - 2 if anchor == "end" else 0)
                    fit = (
                        tsize
                        if anchor != "middle" or "markers" not in mode
                        else (_fit(lines, tsize, max(size * 1.6, 14), size * 1.6) or tsize)
                    )
                    el = _text(lines, cx + dx, cy, fit, anchor, "middle", colour, extra=' pointer-events="none"')
                out.append(el)
        out.append("</g>")
        return "".join(out)

    def _label_room(self, xs, ys, n: int, stride: int) -> dict[int, float]:
        """Point index -> px to its nearest neighbour on the same row (twice, for
        a label centred under it: the room it has before touching the next)."""
        rows: dict[float, list[tuple[float, int]]] = {}
        for i in range(0, n, stride):
            px, py = self.x.pos(xs[i]), self.y.pos(ys[i])
            if px is not None and py is not None:
                rows.setdefault(round(self.py(py)), []).append((self.px(px), i))
        room: dict[int, float] = {}
        for pts in rows.values():
            pts.sort()
            for k, (x, i) in enumerate(pts):
                gaps = [abs(x - pts[k - 1][0])] if k else []
                if k + 1 < len(pts):
                    gaps.append(abs(pts[k + 1][0] - x))
                if gaps:
                    room[i] = min(gaps)
        return room

    # ---- shapes and annotations
    def _shape(self, s: dict) -> str:
        kind = s.get("type", "rect" if "x0" in s else None)
        x0, x1 = self.ref_x(s.get("x0"), s.get("xref")), self.ref_x(s.get("x1"), s.get("xref"))
        y0, y1 = self.ref_y(s.get("y0"), s.get("yref")), self.ref_y(s.get("y1"), s.get("yref"))
        if None in (x0, x1, y0, y1):
            return ""
        line = s.get("line") or {}
        lw = _num(line.get("width"))
        lw = 2.0 if lw is None else lw
        stroke = _colour(line.get("color"), "#444444") if lw > 0 else "none"
        dash = _dash(line.get("dash"), lw)
        opacity = _num(s.get("opacity"))
        op = f' opacity="{_f(opacity)}"' if opacity is not None and opacity < 1 else ""
        if kind == "line":
            return (
                f'<line x1="{_f(x0)}" y1="{_f(y0)}" x2="{_f(x1)}" y2="{_f(y1)}" stroke="{stroke}" '
                f'stroke-width="{_f(lw)}"{dash}{op}/>'
            )
        fill = _colour(s.get("fillcolor"), "none") if s.get("fillcolor") else "none"
        fo = ""  # a translucent fillcolor is kept as rgba() by _colour
        geom = f'x="{_f(min(x0, x1))}" y="{_f(min(y0, y1))}" width="{_f(abs(x1 - x0))}" height="{_f(abs(y1 - y0))}"'
        if kind == "circle":
            return (
                f'<ellipse cx="{_f((x0 + x1) / 2)}" cy="{_f((y0 + y1) / 2)}" rx="{_f(abs(x1 - x0) / 2)}" '
                f'ry="{_f(abs(y1 - y0) / 2)}" fill="{fill}"{fo} stroke="{stroke}" stroke-width="{_f(lw)}"{dash}{op}/>'
            )
        if kind != "rect":
            return ""
        return f'<rect {geom} fill="{fill}"{fo} stroke="{stroke}" stroke-width="{_f(lw)}"{dash}{op}/>'

    def _annotation(self, a: dict) -> str:
        x, y = self.ref_x(a.get("x", 0.5), a.get("xref")), self.ref_y(a.get("y", 0.5), a.get("yref"))
        if x is None or y is None or a.get("visible") is False:
            return ""
        size = _num(_get(a, "font", "size")) or self.font_size
        colour = _colour(_get(a, "font", "color"), self.font_colour) if _get(a, "font", "color") else self.font_colour
        out = ""
        if a.get("showarrow", True):
            ax, ay = _num(a.get("ax")), _num(a.get("ay"))
            ax = -10.0 if ax is None else ax
            ay = -30.0 if ay is None else ay
            out += (
                f'<line x1="{_f(x)}" y1="{_f(y)}" x2="{_f(x + ax)}" y2="{_f(y + ay)}" '
                f'stroke="{_colour(a.get("arrowcolor"), "#444444")}" stroke-width="1"/>'
            )
            x, y = x + ax, y + ay
        xa = {"left": "start", "right": "end"}.get(a.get("xanchor"), "middle")
        ya = {"top": "top", "bottom": "bottom"}.get(a.get("yanchor"), "middle")
        return out + _text(_runs(a.get("text", "")), x, y, size, xa, ya, colour)

    # ---- axes, colour bar, legend
    def _axes(self) -> str:
        out = []
        size = self.xtick_size
        if self.xside == "top":
            base = self.top - 4
        else:
            base = self.top + self.ph + 4
        for p, lines in self.xticks:
            x = self.px(p)
            if not (self.left - 1 <= x <= self.left + self.pw + 1):
                continue
            if self.slant:
                if self.xside == "top":
                    out.append(_text(lines, x, base - 2, size, "start", "middle", self.font_colour, rotate=self.angle))
                else:
                    out.append(_text(lines, x, base + 4, size, "end", "middle", self.font_colour, rotate=self.angle))
            else:
                out.append(_text(lines, x, base, size, "middle", "bottom" if self.xside == "top" else "top", self.font_colour))
        size = self.ytick_size
        for p, lines in self.yticks:
            y = self.py(p)
            if self.top - 1 <= y <= self.top + self.ph + 1:
                out.append(_text(lines, self.left - 6, y, size, "end", "middle", self.font_colour))
        if self.xtitle:
            xlab_h = 0 if not self.xticks else (max(_height(r, self.xtick_size) for _, r in self.xticks) + 6)
            if self.xside == "top":
                y = self.top - xlab_h - 6
                out.append(
                    _text(_runs(self.xtitle), self.left + self.pw / 2, y, self.font_size, "middle", "bottom", self.font_colour)
                )
            else:
                y = self.top + self.ph + xlab_h + 6
                out.append(
                    _text(_runs(self.xtitle), self.left + self.pw / 2, y, self.font_size, "middle", "top", self.font_colour)
                )
        if self.ytitle:
            ylab_w = max([_width(r, self.ytick_size) for _, r in self.yticks] + [0]) + 8
            x = self.left - ylab_w - 8
            out.append(
                _text(
                    _runs(self.ytitle),
                    x,
                    self.top + self.ph / 2,
                    self.font_size,
                    "middle",
                    "bottom",
                    self.font_colour,
                    rotate=-90,
                )
            )
        return "".join(out)

    def _grid(self) -> str:
        out = []
        if not self.x.categorical and self.xticks:
            for p, _ in self.xticks:
                x = self.px(p)
                if self.left <= x <= self.left + self.pw:
                    out.append(
                        f'<line x1="{_f(x)}" y1="{_f(self.top)}" x2="{_f(x)}" y2="{_f(self.top + self.ph)}" '
                        f'stroke="#ebebeb" stroke-width="1"/>'
                    )
        if not self.y.categorical and self.yticks:
            for p, _ in self.yticks:
                y = self.py(p)
                if self.top <= y <= self.top + self.ph:
                    out.append(
                        f'<line x1="{_f(self.left)}" y1="{_f(y)}" x2="{_f(self.left + self.pw)}" y2="{_f(y)}" '
                        f'stroke="#ebebeb" stroke-width="1"/>'
                    )
        return "".join(out)

    def _colorbar_ticks(self, trace: dict, scale: _Scale) -> list[tuple[float, str]]:
        cb = trace.get("colorbar") or {}
        vals, texts = _list(cb.get("tickvals")), _list(cb.get("ticktext"))
        if vals:
            out = []
            for i, v in enumerate(vals):
                n = _num(v)
                if n is not None:
                    out.append((n, str(texts[i]) if i < len(texts) and texts[i] is not None else _fmt_num(n)))
            return out
        return [(v, _fmt_num(v)) for v in _nice_ticks(scale.zmin, scale.zmax, 5)]

    def _colorbar(self, x0: float) -> tuple[str, float]:
        bars = self._colorbars()
        if not bars:
            return "", 0.0
        trace, scale = bars[0]
        ticks = self._colorbar_ticks(trace, scale)
        title = _get(trace, "colorbar", "title", "text", default="")
        out = ['<g class="colorbar">']
        y = self.top
        if title:
            out.append(_text(_runs(title), x0, y, 12, "start", "top", self.font_colour))
            y += _height(_runs(title), 12) + 4
        if scale.stepped and cb_discrete(ticks, scale):
            # one swatch per class: a discrete scale reads better as a list than as a bar
            for v, label in ticks:
                fill = scale.colour(v)
                out.append(
                    f'<rect x="{_f(x0)}" y="{_f(y)}" width="14" height="14" fill="{fill}" stroke="#636363" stroke-width="0.5"/>'
                )
                out.append(_text(_runs(label), x0 + 20, y + 7, 11, "start", "middle", self.font_colour))
                y += 19
        else:
            h = max(40.0, min(self.ph - (y - self.top), 240.0))
            step = h / _SCALE_STEPS
            for s in range(_SCALE_STEPS):
                t = 1 - (s + 0.5) / _SCALE_STEPS
                out.append(
                    f'<rect x="{_f(x0)}" y="{_f(y + s * step)}" width="14" height="{_f(step + 0.6)}" fill="{scale.at(t)}"/>'
                )
            span = scale.zmax - scale.zmin or 1
            for v, label in ticks:
                t = (v - scale.zmin) / span
                if 0 <= t <= 1:
                    out.append(_text(_runs(label), x0 + 20, y + (1 - t) * h, 11, "start", "middle", self.font_colour))
            y += h
        out.append("</g>")
        right = 30 + max([_width(_runs(lab), 11) for _, lab in ticks] + [_width(_runs(title), 12) - 20, 20])
        return "".join(out), right

    def _legend_entry(self, t: dict, k: int, x: float, y: float) -> str:
        kind = t.get("type", "scatter")
        default = self.colorway[k % len(self.colorway)]
        mode = str(t.get("mode") or "markers")
        marker = t.get("marker") or {}
        colour = marker.get("color")
        if isinstance(colour, (list, tuple)):
            colour = next((c for c in colour if isinstance(c, str)), None)
        out = ""
        if kind == "bar" or kind == "heatmap":
            out += f'<rect x="{_f(x + 6)}" y="{_f(y - 6)}" width="12" height="12" fill="{_colour(colour, default)}"/>'
        else:
            if "lines" in mode:
                lc = _colour(_get(t, "line", "color") or default, default)
                lw = _num(_get(t, "line", "width"))
                lw = 2.0 if lw is None else lw
                out += (
                    f'<line x1="{_f(x)}" y1="{_f(y)}" x2="{_f(x + 24)}" y2="{_f(y)}" stroke="{lc}" '
                    f'stroke-width="{_f(max(lw, 1.5))}"{_dash(_get(t, "line", "dash"), lw)}/>'
                )
            if "markers" in mode:
                size = min(12.0, _num(_pick(marker.get("size"), 0)) or 8.0)
                out += _marker(
                    _pick(marker.get("symbol"), 0) or "circle",
                    x + 12,
                    y,
                    size,
                    _colour(colour or default, default),
                    _colour(_get(marker, "line", "color"), "#444444"),
                    _num(_get(marker, "line", "width")) or 0.0,
                    "",
                    1.0,
                )
        return out + _text(_runs(t.get("name")), x + 30, y, 12, "start", "middle", self.font_colour)

    def _legend(self, x0: float) -> str:
        items = self._legend_traces()
        if not items:
            return ""
        index = {id(t): k for k, t in enumerate(self.traces)}
        out = ['<g class="legend">']
        title = _get(self.layout, "legend", "title", "text", default="")
        if self._legend_horizontal():
            x, y = self.left, self.H - self._legend_below_height(self.pw) + 10
            for t in items:
                w = 46 + _width(_runs(t.get("name")), 12)
                if x + w > self.left + self.pw and x > self.left:
                    x, y = self.left, y + 20
                out.append(self._legend_entry(t, index[id(t)], x, y))
                x += w
        else:
            y = self.top
            if title:
                out.append(_text(_runs(title), x0, y, 12, "start", "top", self.font_colour))
                y += _height(_runs(title), 12) + 6
            for t in items:
                out.append(self._legend_entry(t, index[id(t)], x0, y + 8))
                y += 20
        out.append("</g>")
        return "".join(out)

    # ---- all of it
    def render(self) -> str:
        self._extents()
        self._geometry()
        L = self.layout
        paper = _colour(L.get("paper_bgcolor") or "white", "#ffffff")
        plot_bg = _colour(L.get("plot_bgcolor") or self.tlayout.get("plot_bgcolor") or "#E5ECF6", "#ffffff")
        title_text = plain(
            _get(L, "title", "text", default="") if isinstance(L.get("title"), dict) else L.get("title") or "", 200
        )
        body = [
            f'<rect x="0" y="0" width="{_f(self.W)}" height="{_f(self.H)}" fill="{paper}"/>',
            f'<rect x="{_f(self.left)}" y="{_f(self.top)}" width="{_f(self.pw)}" height="{_f(self.ph)}" fill="{plot_bg}"/>',
        ]
        shapes = [s for s in _list(L.get("shapes")) if isinstance(s, dict)]
        body.append(self._grid())
        body += [self._shape(s) for s in shapes if s.get("layer") == "below"]
        nbars = sum(1 for t in self.traces if t.get("type") == "bar")
        clip_parts = []
        bar_k = 0
        for k, t in enumerate(self.traces):
            kind = t.get("type", "scatter")
            if kind == "heatmap":
                clip_parts.append(self._heatmap(t))
            elif kind == "bar":
                clip_parts.append(
                    self._bar(t, bar_k if L.get("barmode") != "overlay" else 0, nbars if L.get("barmode") != "overlay" else 1)
                )
                bar_k += 1
        for k, t in enumerate(self.traces):
            if t.get("type", "scatter") in ("scatter", "scattergl"):
                clip_parts.append(self._scatter(t, k))
        body += clip_parts
        body += [self._shape(s) for s in shapes if s.get("layer") != "below"]
        body += [self._annotation(a) for a in _list(L.get("annotations"))[:500] if isinstance(a, dict)]
        body.append(self._axes())
        if self.title_lines:
            tx = _num(_get(L, "title", "x"))
            tx = 0.05 if tx is None else tx
            anchor = "start" if tx < 0.3 else ("end" if tx > 0.7 else "middle")
            x = self.W * tx if anchor != "start" else max(8.0, min(self.W * tx, self.left))
            body.append(_text(self.title_lines, x, 8, self.title_size, anchor, "top", self.font_colour))
        cb, cb_w = self._colorbar(self.left + self.pw + 16)
        body.append(cb)
        body.append(self._legend(self.left + self.pw + 16 + (cb_w + 8 if cb else 0)))
        if self.notes:
            body.append(_text([[(n, {"italic": True})] for n in self.notes[:3]], 8, self.H - 4, 10, "start", "bottom", "#636363"))
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="ncclnb-figure" width="{_f(self.W)}" '
            f'height="{_f(self.H)}" viewBox="0 0 {_f(self.W)} {_f(self.H)}" font-family="{esc_attr(FONT)}" '
            f'font-size="{_f(self.font_size)}" role="img" aria-label="{esc_attr(title_text or "figure")}" '
            f'style="max-width:100%;height:auto">'
        )
        return head + _title_el(title_text) + "".join(body) + "</svg>"


def cb_discrete(ticks, scale: _Scale) -> bool:
    """True when the colour bar's ticks name the classes of a step scale (at most 16)."""
    return 0 < len(ticks) <= 16


# --- drawing primitives -------------------------------------------------------------


def _step(nums: list[float]) -> float:
    if len(nums) < 2:
        return 1.0
    diffs = [abs(b - a) for a, b in zip(nums, nums[1:]) if b != a]
    return min(diffs) if diffs else 1.0


def _edges(pos: list[Optional[float]]) -> list[tuple[float, float]]:
    """Cell (lo, hi) along an axis: midpoints between neighbours."""
    known = [p for p in pos if p is not None]
    step = _step(sorted(known)) if known else 1.0
    out = []
    for i, p in enumerate(pos):
        if p is None:
            out.append((0.0, 0.0))
            continue
        prev = pos[i - 1] if i > 0 else None
        nxt = pos[i + 1] if i + 1 < len(pos) else None
        lo = (p + prev) / 2 if prev is not None and abs(p - prev) <= 2 * step else p - step / 2
        hi = (p + nxt) / 2 if nxt is not None and abs(nxt - p) <= 2 * step else p + step / 2
        out.append((lo, hi))
    return out


def _cell_fields(xs, ys, z, text, hover, i, j) -> dict:
    def at(m, a, b):
        try:
            return m[a][b]
        except (IndexError, TypeError):
            return None

    return {
        "x": xs[j] if j < len(xs) else j,
        "y": ys[i] if i < len(ys) else i,
        "z": at(z, i, j),
        "text": at(text, i, j),
        "hovertext": at(hover, i, j),
    }


def _fit(lines, size: float, width: float, height: float) -> Optional[float]:
    """The font size at most ``size`` at which ``lines`` fit in a box; None below 6 px."""
    w, h = _width(lines, size), _height(lines, size)
    factor = min(1.0, width / w if w else 1.0, height / h if h else 1.0)
    fitted = size * factor
    return fitted if fitted >= 6 else None


def _pick(value, i):
    if isinstance(value, (list, tuple)):
        return value[i] if i < len(value) else (value[-1] if value else None)
    if hasattr(value, "tolist"):
        return _pick(value.tolist(), i)
    return value


def _dash(dash, width: float) -> str:
    w = max(1.0, width)
    pattern = {"dash": (3 * w, 2 * w), "dot": (w, 2 * w), "dashdot": (3 * w, 2 * w, w, 2 * w), "longdash": (5 * w, 2 * w)}.get(
        str(dash or "solid")
    )
    return f' stroke-dasharray="{",".join(_f(p) for p in pattern)}"' if pattern else ""


def _marker(
    symbol: object, cx: float, cy: float, size: float, fill: str, stroke: str, sw: float, tip: str, opacity: float
) -> str:
    sym = str(symbol)
    open_ = sym.endswith("-open")
    sym = sym.replace("-open", "")
    r = size / 2
    paint = (
        f'fill="{"none" if open_ else fill}" stroke="{fill if open_ else stroke}" '
        f'stroke-width="{_f(max(sw, 1.0) if open_ else sw)}"'
    )
    if opacity < 1:
        paint += f' opacity="{_f(opacity)}"'
    inner = _title_el(tip)
    end = f">{inner}</" if inner else "/>"
    if sym == "x":  # two strokes in the fill colour over a wider outline in the line colour
        d = f"M{_f(cx - r)},{_f(cy - r)}L{_f(cx + r)},{_f(cy + r)}M{_f(cx - r)},{_f(cy + r)}L{_f(cx + r)},{_f(cy - r)}"
        w = max(size / 4, 1.5)
        op = f' opacity="{_f(opacity)}"' if opacity < 1 else ""
        under = (
            f'<path d="{d}" fill="none" stroke="{stroke}" stroke-width="{_f(w + 2 * sw)}"{op}/>' if sw > 0 and not open_ else ""
        )
        el = f'<path d="{d}" fill="none" stroke="{fill}" stroke-width="{_f(w)}"{op}'
        return under + el + (end + "path>" if inner else end)
    if sym == "square":
        el = f'<rect x="{_f(cx - r)}" y="{_f(cy - r)}" width="{_f(size)}" height="{_f(size)}" {paint}'
        return el + (end + "rect>" if inner else end)
    if sym in ("diamond", "triangle-up", "triangle-down"):
        if sym == "diamond":
            pts = [(cx, cy - r * 1.15), (cx + r * 1.15, cy), (cx, cy + r * 1.15), (cx - r * 1.15, cy)]
        elif sym == "triangle-up":
            pts = [(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)]
        else:
            pts = [(cx, cy + r), (cx + r, cy - r), (cx - r, cy - r)]
        el = f'<polygon points="{" ".join(f"{_f(a)},{_f(b)}" for a, b in pts)}" {paint}'
        return el + (end + "polygon>" if inner else end)
    el = f'<circle cx="{_f(cx)}" cy="{_f(cy)}" r="{_f(r)}" {paint}'
    return el + (end + "circle>" if inner else end)
