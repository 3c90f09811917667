"""The grids' curve figures: a metric against updates, a colour and a legend entry per system."""

from pathlib import Path
from typing import List, Sequence, Tuple

Curve = List[Tuple[int, float]]  # (updates, value)


def plot_curves(path: Path, curves: Sequence[Tuple[str, Curve]], ylabel: str) -> bool:
    """A PNG with a line per (name, curve); the lines of one name (its seeds) share a colour.
    False, and no file, when no curve has a point yet."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not any(curve for _, curve in curves):
        return False
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = list(dict.fromkeys(name for name, _ in curves))
    figure, axes = plt.subplots(figsize=(7, 4.5))
    labelled = set()
    for name, curve in curves:
        if not curve:
            continue
        updates, values = zip(*curve)
        colour = colours[names.index(name) % len(colours)]
        label = None if name in labelled else name
        axes.plot(updates, values, color=colour, marker="o", markersize=3, label=label)
        labelled.add(name)
    axes.set_xlabel("updates")
    axes.set_ylabel(ylabel)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True
