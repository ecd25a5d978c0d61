"""A bar's "no interval" note (too few pairs to resample: no whiskers must not read as
"known exactly"), kept inside the axes and readable on what it is written over.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.patches import Rectangle
from matplotlib.text import Annotation

#: The gid of a bar's "no interval" note.
NO_INTERVAL = "calib_metrics: no interval"

#: Share of the x axis beyond which a bar's note is written inside its bar's end: to its
#: right, it had run past the axes into the gap before the difference panel.
NOTE_INSIDE = 0.8

#: A bar at least this many times the note's font size tall holds the note (its letters
#: with their ascenders and descenders, and a little room).
NOTE_ROOM = 1.3

#: Opacity of the box under a note too tall for its bar: the letters read on it (the
#: colour under them is at least this much the axes'), and the bars' ends show through.
BOX_ALPHA = 0.75


def no_interval_note(ax: Axes, end: tuple[float, float]) -> Annotation:
    """The note beside a bar's ``end``, where its whiskers would be."""
    note = ax.annotate("no interval", end, xytext=(3, 0), textcoords="offset points",
                       va="center", fontsize=6, color="0.35")  # fmt: skip
    note.set_gid(NO_INTERVAL)
    return note


def keep_notes_inside(ax: Axes, notes: Sequence[tuple[Annotation, Rectangle]]) -> None:
    """Each note beside a bar near the axes' right edge (past :data:`NOTE_INSIDE`), written
    inside the axes: within its bar's end, in black or white, whichever contrasts more with
    the bar (white had read at a contrast of 2.5 on orange, about 1 on the pale bars of
    dark_background); where the bar is thinner than the note, right-aligned to the axes'
    right edge on a box of the axes' colour, through which the bars' ends show faintly
    (white letters had spilled off the bar onto the white axes)."""
    right = ax.get_xlim()[1]
    for note, bar in notes:
        if note.xy[0] <= NOTE_INSIDE * right:
            continue
        note.xyann = (-3, 0)
        note.set_horizontalalignment("right")
        if _points_tall(ax, bar) >= NOTE_ROOM * note.get_fontsize():
            note.set_color(_readable_on(_over(bar.get_facecolor(), ax.get_facecolor())))
            continue
        note.xy = (1.0, note.xy[1])
        note.xycoords = ("axes fraction", "data")
        background = _over(ax.get_facecolor(), "white")
        note.set_color(_readable_on(background))
        box = {"boxstyle": "square,pad=0.1", "facecolor": background, "alpha": BOX_ALPHA}
        note.set_bbox(box | {"linewidth": 0})


def _points_tall(ax: Axes, bar: Rectangle) -> float:
    """``bar``'s height in points, as the axes are placed now."""
    bottom, top = (bar.get_y(), bar.get_y() + bar.get_height())
    (_, y0), (_, y1) = ax.transData.transform([(0, bottom), (0, top)])
    return abs(y1 - y0) * 72 / ax.figure.dpi


def _over(colour: object, background: object) -> tuple[float, float, float]:
    """``colour`` as seen over ``background`` (its alpha blended in)."""
    *rgb, alpha = to_rgba(colour)
    return tuple(alpha * c + (1 - alpha) * b for c, b in zip(rgb, to_rgb(background)))


def _readable_on(colour: tuple[float, float, float]) -> str:
    """``"black"`` or ``"white"``, whichever has the higher WCAG 2 contrast ratio with
    ``colour``: (L + 0.05) / 0.05 for black, 1.05 / (L + 0.05) for white, L its relative
    luminance.

    Example:
        >>> from matplotlib.colors import to_rgb
        >>> _readable_on(to_rgb("C1")), _readable_on(to_rgb("#ffffb3")), _readable_on(to_rgb("C3"))
        ('black', 'black', 'white')
    """
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in colour]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "black" if (luminance + 0.05) ** 2 >= 0.05 * 1.05 else "white"
