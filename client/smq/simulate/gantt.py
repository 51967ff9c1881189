"""The Gantt chart of a simulation: one row per instance slot, so a reader sees at a glance who held
which instances, what provisioning and stops cost, and where preemptions threw work away. matplotlib
is an optional extra, imported only when a chart is drawn: commands that draw nothing never pay for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from smq_lambda.replay.timeline import Segment

Colour = tuple[float, float, float, float]
HOUR_S = 3600.0
WIDTH_IN, ROW_IN, MARGIN_IN, MIN_HEIGHT_IN, DPI = 14.0, 0.25, 1.5, 3.6, 120
AXES_IN, NAME_IN_PER_CHAR = 11.0, 0.065
"""About how wide the plot area is (the slot labels and the legend take the rest), and a name's letters."""
BAR = 0.8
COLORMAP, SHADES = "viridis_r", (0.08, 1.0)
"""The lowest priority at the light end of the colormap, the highest at the dark end."""
PROVISIONING, STOPPING, LOST = "#d4d4d4", "#8c8c8c", "#d62728"
PREEMPTION: dict[str, Any] = {"marker": "x", "color": "black", "linewidths": 1.4}
INTERRUPTION: dict[str, Any] = {"marker": "|", "color": LOST, "linewidths": 1.6}


class MissingPlotting(RuntimeError):
    """matplotlib is missing; the CLI decides whether that is an error or a skipped chart."""

    def __init__(self) -> None:
        super().__init__("smq simulate draws gantt.png with matplotlib: pip install 'smq-sagemaker[simulate]'")


def slot_rows(pools: Mapping[str, int]) -> dict[tuple[str, int], int]:
    """Row of each (pool, slot), top to bottom: pools in the order given, then slot numbers."""
    slots = [(pool, slot) for pool, count in pools.items() for slot in range(count)]
    return {pool_slot: row for row, pool_slot in enumerate(slots)}


def priority_colours(priorities: Iterable[int]) -> dict[int, Colour]:
    """One colour per distinct priority, higher ones darker. Spread by rank, not value, so that
    priorities 0..3 and 1..1000 are equally easy to tell apart."""
    try:
        from matplotlib import colormaps
    except ImportError as exc:
        raise MissingPlotting() from exc
    colormap = colormaps[COLORMAP]
    ranked = sorted(set(priorities))
    low, high = SHADES if len(ranked) > 1 else (sum(SHADES) / 2,) * 2
    step = (high - low) / max(len(ranked) - 1, 1)
    return {priority: colormap(low + rank * step) for rank, priority in enumerate(ranked)}


def figure_height(rows: int) -> float:
    """Inches: a fixed height per slot row keeps bars readable from 2 slots to hundreds."""
    return max(MIN_HEIGHT_IN, MARGIN_IN + ROW_IN * rows)


def draw_gantt(segments: Sequence[Segment], pools: Mapping[str, int], path: Path, *, title: str) -> None:
    """Write the chart of `segments` over the slots of `pools` to `path` as a PNG."""
    moments = (moment for s in segments for moment in (s.start_s, s.running_s, s.stop_s, s.end_s, *s.interruptions))
    horizon_s = max((moment for moment in moments if moment is not None), default=0.0) or HOUR_S
    chart = _Chart(slot_rows(pools), priority_colours(segment.priority for segment in segments), horizon_s)
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # priority_colours raised if matplotlib is missing
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH_IN, figure_height(len(chart.rows))), dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    _draw_bars(axes, segments, chart)
    _draw_marks(axes, segments, chart)
    _draw_names(axes, segments, chart)
    _dress(axes, pools, horizon_s, title)
    figure.legend(handles=_legend(chart.colours), loc="outside right upper", fontsize=8, frameon=False)
    FigureCanvasAgg(figure)
    figure.savefig(path, format="png")


@dataclass(frozen=True)
class _Chart:
    """What every drawing step needs: the row of each slot, the colour of each priority, the end."""

    rows: Mapping[tuple[str, int], int]
    colours: Mapping[int, Colour]
    horizon_s: float

    def rows_of(self, segment: Segment) -> list[int]:
        """The rows of the slots an attempt held; a slot the chart has no row for is a caller's error."""
        missing = [slot for slot in segment.slots if (segment.pool, slot) not in self.rows]
        if missing:
            raise ValueError(f"{segment.job} ran on {segment.pool} slots {missing}, which the pools do not have")
        return [self.rows[(segment.pool, slot)] for slot in segment.slots]

    def phases(self, segment: Segment) -> tuple[float, float, float]:
        """When training began and ended and the instances went back. A phase that never happened
        has no length; an attempt still open runs to the end of the chart."""
        end = segment.end_s if segment.end_s is not None else self.horizon_s
        training_end = segment.stop_s if segment.stop_s is not None else end
        return (segment.running_s if segment.running_s is not None else training_end), training_end, end


@dataclass
class _Bars:
    """Bars of one kind, gathered so each kind is one call to matplotlib however many jobs."""

    bars: list[tuple[int, float, float, Colour | str]] = field(default_factory=list)

    def add(self, row: int, start_s: float, end_s: float, colour: Colour | str = "none") -> None:
        if end_s > start_s:
            self.bars.append((row, start_s / HOUR_S, (end_s - start_s) / HOUR_S, colour))

    def draw(self, axes: Axes, height: float = BAR, **style: Any) -> None:
        if self.bars:
            rows, lefts, widths, colours = zip(*self.bars, strict=True)
            axes.barh(rows, widths, left=lefts, height=height, color=colours, **style)


def _lost_span(segment: Segment) -> tuple[float, float] | None:
    """The training a stop threw away, ending at the stop. `lost_work_s` also counts the losses of
    earlier spot interruptions, so the band never reaches back past the last one."""
    if segment.stop_s is None or segment.running_s is None or segment.lost_work_s <= 0:
        return None
    since = max([segment.running_s, *(time for time in segment.interruptions if time <= segment.stop_s)])
    start = max(segment.stop_s - segment.lost_work_s, since)
    return (start, segment.stop_s) if start < segment.stop_s else None


def _draw_bars(axes: Axes, segments: Sequence[Segment], chart: _Chart) -> None:
    """Provisioning, training (coloured by priority), the stop, on every slot an attempt held."""
    provisioning, training, stopping, lost, backfill = _Bars(), _Bars(), _Bars(), _Bars(), _Bars()
    for segment in segments:
        (ready, training_end, end), lost_span = chart.phases(segment), _lost_span(segment)
        for row in chart.rows_of(segment):
            provisioning.add(row, segment.start_s, ready, PROVISIONING)
            training.add(row, ready, training_end, chart.colours[segment.priority])
            stopping.add(row, training_end, end, PROVISIONING)
            lost_start, lost_end = lost_span or (0.0, 0.0)
            lost.add(row, lost_start, lost_end, LOST)
            if segment.backfill:
                backfill.add(row, segment.start_s, end)
    provisioning.draw(axes, linewidth=0)
    training.draw(axes, edgecolor="white", linewidth=0.4)
    stopping.draw(axes, edgecolor=STOPPING, hatch="////", linewidth=0)
    lost.draw(axes, height=BAR * 0.4)
    backfill.draw(axes, fill=False, edgecolor="black", linewidth=0.8)


def _draw_marks(axes: Axes, segments: Sequence[Segment], chart: _Chart) -> None:
    """Preemptions as a black x at the stop, spot interruptions as a red tick across the bar."""
    preemptions = [(s.stop_s, s) for s in segments if s.outcome == "preempted" and s.stop_s is not None]
    interruptions = [(moment, s) for s in segments for moment in s.interruptions]
    for style, size, marks in ((PREEMPTION, 36, preemptions), (INTERRUPTION, 110, interruptions)):
        points = [(moment / HOUR_S, row) for moment, s in marks for row in chart.rows_of(s)]
        if points:
            xs, ys = zip(*points, strict=True)
            axes.scatter(xs, ys, s=size, zorder=3, **style)


def _draw_names(axes: Axes, segments: Sequence[Segment], chart: _Chart) -> None:
    """The job's name on training bars wide enough to hold it, once per attempt (its first slot)."""
    inches_per_s = AXES_IN / (chart.horizon_s * 1.01)
    for segment in segments:
        ready, training_end, _ = chart.phases(segment)
        kept_end = (_lost_span(segment) or (training_end,))[0]  # the name stays off the lost-work band
        r, g, b, _ = chart.colours[segment.priority]
        ink = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"
        row, middle = min(chart.rows_of(segment)), (ready + kept_end) / 2 / HOUR_S
        if (kept_end - ready) * inches_per_s >= NAME_IN_PER_CHAR * (len(segment.job) + 2):
            axes.text(middle, row, segment.job, ha="center", va="center", fontsize=7, color=ink)


def _dress(axes: Axes, pools: Mapping[str, int], horizon: float, title: str) -> None:
    """Slot labels, a line between pools, hours on x, the first slot at the top."""
    labels = [f"{pool} #{slot}" for pool, slot in slot_rows(pools)]
    axes.set_yticks(range(len(labels)), labels, fontsize=8 if len(labels) <= 48 else 6)
    for boundary in accumulate(list(pools.values())[:-1]):
        axes.axhline(boundary - 0.5, color="black", linewidth=1.0)
    axes.set(ylim=(len(labels) - 0.5, -0.5), xlim=(0, horizon / HOUR_S * 1.01), xlabel="hours of virtual time")
    axes.set(title=title, axisbelow=True)
    axes.grid(axis="x", color="#e6e6e6", linewidth=0.6)
    axes.tick_params(axis="y", length=0)


def _legend(colours: Mapping[int, Colour]) -> list[Any]:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return [
        *(Patch(color=colours[priority], label=f"priority {priority}") for priority in sorted(colours, reverse=True)),
        Patch(color=PROVISIONING, label="provisioning"),
        Patch(facecolor=PROVISIONING, edgecolor=STOPPING, hatch="////", linewidth=0, label="stopping"),
        Patch(color=LOST, label="lost work"),
        Line2D(
            [], [], marker="x", color="black", markeredgewidth=1.4, linestyle="none", markersize=8, label="preemption"
        ),
        Line2D(
            [],
            [],
            marker="|",
            color=LOST,
            markeredgewidth=1.6,
            linestyle="none",
            markersize=8,
            label="spot interruption",
        ),
        Patch(fill=False, edgecolor="black", linewidth=0.8, label="backfill"),
    ]
