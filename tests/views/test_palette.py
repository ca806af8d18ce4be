"""The link palette stays readable for colour-blind readers.

Each link class colour is passed through a simulation of protanopia,
deuteranopia and tritanopia and compared in CIELAB: every pair of classes
must stay apart (CIE76 delta-E) and lightness must run one way along the
speed order, so "faster" reads as "darker" whatever colours a reader sees.

Simulation: Machado, Oliveira & Fernandes, "A Physiologically-based Model for
Simulation of Color Vision Deficiency", IEEE TVCG 15(6), 2009, the matrices
for severity 1.0 as published with the paper, applied to linear RGB (sRGB
decoded with the IEC 61966-2-1 transfer curve), then sRGB (D65) -> XYZ -> CIELAB.
"""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest

import ncclnb
from ncclnb.views._common import LINK_CLASSES, LINK_COLOURS, LINK_ORDER

# Machado et al. (2009), severity 1.0, rows act on linear (R, G, B).
SIMULATIONS = {
    "normal": ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}

MIN_DELTA_E = 15.0  # CIE76, between any two link classes (about 2.3 is "just noticeable")
MIN_LIGHTNESS_STEP = 8.0  # L*, between classes adjacent in speed order
MIN_DELTA_E_EXTRA = 15.0  # the diagonal ("X") and "not known" ("?") against every class and each other

# The palette this replaced (green -> red, ColorBrewer RdYlGn): the control the check must reject.
OLD_RED_GREEN = ("#1a9850", "#91cf60", "#d9ef8b", "#fee08b", "#fc8d59", "#d73027")


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def simulated_lab(colour: str, simulation: str) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB '#rrggbb' as seen under ``simulation``."""
    h = colour.lstrip("#")
    assert len(h) == 6, colour
    rgb = [_linear(int(h[i : i + 2], 16) / 255) for i in (0, 2, 4)]
    m = SIMULATIONS[simulation]
    r, g, b = (min(1.0, max(0.0, sum(m[row][k] * rgb[k] for k in range(3)))) for row in range(3))
    x = 0.4124564 * r + 0.3575761 * g + 0.1804375 * b
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = 0.0193339 * r + 0.1191920 * g + 0.9503041 * b

    def f(t: float) -> float:
        return t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29

    fx, fy, fz = f(x / 0.95047), f(y / 1.0), f(z / 1.08883)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def delta_e76(a, b) -> float:
    return sum((p - q) ** 2 for p, q in zip(a, b)) ** 0.5


def palette_problems(colours, simulation: str) -> list[str]:
    """What makes the speed-ordered ``colours`` unreadable under ``simulation`` (empty: nothing)."""
    labs = [simulated_lab(c, simulation) for c in colours]
    problems = []
    for (i, a), (j, b) in itertools.combinations(enumerate(labs), 2):
        d = delta_e76(a, b)
        if d < MIN_DELTA_E:
            problems.append(f"classes {i} and {j}: delta-E76 {d:.1f} < {MIN_DELTA_E}")
    steps = [labs[i + 1][0] - labs[i][0] for i in range(len(labs) - 1)]
    if not (all(s >= MIN_LIGHTNESS_STEP for s in steps) or all(s <= -MIN_LIGHTNESS_STEP for s in steps)):
        problems.append(
            f"lightness not monotone by at least {MIN_LIGHTNESS_STEP} L*: steps {', '.join(f'{s:.1f}' for s in steps)}"
        )
    return problems


def test_the_colour_maths_on_known_values():
    assert simulated_lab("#ffffff", "normal") == pytest.approx((100.0, 0.0, 0.0), abs=0.05)
    assert simulated_lab("#000000", "deuteranopia") == pytest.approx((0.0, 0.0, 0.0), abs=0.05)
    # sRGB red is L* 53.2, a* 80.1, b* 67.2
    assert simulated_lab("#ff0000", "normal") == pytest.approx((53.24, 80.09, 67.20), abs=0.1)
    # under deuteranopia the red-green axis (a*) of pure red all but vanishes
    seen, normal = simulated_lab("#ff0000", "deuteranopia"), simulated_lab("#ff0000", "normal")
    assert abs(seen[1]) < abs(normal[1]) / 4


@pytest.mark.parametrize("simulation", ["deuteranopia", "protanopia"])
def test_the_check_rejects_the_old_red_green_palette(simulation):
    """The control: the palette this replaced fails (PXB and PHB merge, lightness rises then falls)."""
    problems = palette_problems(OLD_RED_GREEN, simulation)
    assert any("lightness" in p for p in problems)
    if simulation == "deuteranopia":
        assert "classes 2 and 3: delta-E76 1.3 < 15.0" in problems


@pytest.mark.parametrize("simulation", list(SIMULATIONS))
def test_link_classes_stay_distinct_and_ordered(simulation):
    colours = [LINK_COLOURS[c] for c in LINK_CLASSES]
    assert palette_problems(colours, simulation) == []


@pytest.mark.parametrize("simulation", list(SIMULATIONS))
def test_self_and_unknown_cells_stand_apart_from_every_class(simulation):
    labs = {c: simulated_lab(LINK_COLOURS[c], simulation) for c in LINK_ORDER}
    for extra in ("X", "?"):
        for other in LINK_ORDER:
            if other != extra:
                assert delta_e76(labs[extra], labs[other]) >= MIN_DELTA_E_EXTRA, (extra, other)


def test_one_palette_keyed_by_class_in_speed_order():
    assert tuple(LINK_ORDER[: len(LINK_CLASSES)]) == LINK_CLASSES
    assert set(LINK_COLOURS) == set(LINK_ORDER)
    assert len({c.lower() for c in LINK_COLOURS.values()}) == len(LINK_COLOURS)


# --- the views use the palette, list only the classes drawn, and mark status with a shape -------

go = pytest.importorskip("plotly.graph_objects")


def _drawn(heat) -> list[str]:
    return [cls for k, cls in enumerate(LINK_ORDER) if any(k in row for row in heat.z)]


def _bad_p2p_cells(snap) -> set:
    read = snap.links.p2p["read"]
    return {
        (f"GPU{snap.gpus[j].index}", f"GPU{snap.gpus[i].index}")
        for i, row in enumerate(read)
        for j, v in enumerate(row)
        if v.strip().upper() not in ("OK", "X")
    }


def test_legend_lists_only_the_link_classes_drawn_in_their_palette_colours():
    from ncclnb.views import topology_figure
    from ncclnb.views._common import LINK_NAMES

    seen = set()
    for name in ("hgx-h100", "l40s-2socket", "rtx2080ti-2x", "seed001-10x-pcie"):
        fig = topology_figure(ncclnb.load(name))
        heat = fig.data[0]
        assert heat.showscale is False  # no colour bar naming classes that are not there
        drawn = _drawn(heat)
        keys = [t for t in fig.data[1:] if t.legendgroup == "links"]
        assert [t.name for t in keys] == [LINK_NAMES.get(cls, cls) for cls in drawn]
        assert [t.marker.color for t in keys] == [LINK_COLOURS[cls] for cls in drawn]
        assert all(t.x == (None,) for t in keys)  # keys draw nothing on the matrix
        seen.add(tuple(drawn))
    assert len(seen) > 1  # the machines differ, and so do their legends
    # the cells' colours come from the same table
    scale = [colour for _, colour in heat.colorscale]
    assert scale[::2] == [LINK_COLOURS[cls] for cls in LINK_ORDER]


def test_p2p_not_ok_is_text_in_cells_that_carry_text():
    from viewdata import l40s_node

    from ncclnb.views import topology_figure
    from ncclnb.views.topology import P2P_NAME

    snap = l40s_node()
    fig = topology_figure(snap)
    heat = fig.data[0]
    assert heat.texttemplate
    bad = _bad_p2p_cells(snap)
    assert bad
    for y, row in zip(heat.y, heat.text):
        for x, cell in zip(heat.x, row):
            assert ("✗" in cell) == ((x, y) in bad), (x, y, cell)
    (key,) = [t for t in fig.data if t.name == P2P_NAME]
    assert key.x == (None,) and key.marker.symbol == "x"  # named in the legend, drawn by the text
    assert not [t for t in topology_figure(ncclnb.load("hgx-h100")).data if t.name == P2P_NAME]


def test_p2p_not_ok_is_a_mark_over_cells_without_text_and_in_the_static_svg():
    from large_inputs import huge_node  # bench/ is on the path (conftest)

    from ncclnb.views import topology_figure
    from ncclnb.views.static import figure_svg
    from ncclnb.views.topology import P2P_NAME

    snap = huge_node(72, matrix=72)
    fig = topology_figure(snap)
    assert fig.layout.meta["mode"] == "cells" and fig.data[0].texttemplate is None
    (marks,) = [t for t in fig.data if t.name == P2P_NAME]
    assert set(zip(marks.x, marks.y)) == _bad_p2p_cells(snap) and len(marks.x) == len(_bad_p2p_cells(snap))
    assert marks.marker.symbol == "x" and marks.hoverinfo == "skip"  # clicks reach the cell under it
    svg = figure_svg(fig)
    root = ET.fromstring(svg)
    crosses = [
        p
        for p in root.iter("{http://www.w3.org/2000/svg}path")
        if p.get("stroke") == "#000000" and p.get("fill") == "none" and p.get("d", "").count("M") == 2
    ]
    assert len(crosses) == len(marks.x) + 1  # a cross over each cell, one in the legend: a shape, not a dot
    assert P2P_NAME in "".join(root.itertext())


def test_p2p_not_ok_marks_the_blocks_that_hold_such_pairs():
    from large_inputs import huge_node

    from ncclnb.views import topology_figure
    from ncclnb.views.topology import P2P_NAME

    fig = topology_figure(huge_node(500, matrix=500))
    heat = fig.data[0]
    assert fig.layout.meta["mode"] == "blocks"
    (marks,) = [t for t in fig.data if t.name == P2P_NAME]
    said = {(x, y) for y, row in zip(heat.y, heat.hovertext) for x, h in zip(heat.x, row) if "not OK" in h}
    assert said and set(zip(marks.x, marks.y)) == said
