"""How both grid reports summarise a system's runs over seeds: mean ± sample standard
deviation of the finished seeds, and which seeds are still missing."""

import statistics
from typing import Optional, Sequence, Tuple


def mean_and_std(values: Sequence[float]) -> Tuple[Optional[float], Optional[float]]:
    """The mean (None without values) and the sample standard deviation (ddof 1; None for fewer
    than two values, which have none)."""
    mean = statistics.fmean(values) if values else None
    std = statistics.stdev(values) if len(values) > 1 else None
    return mean, std


def mean_std_text(mean: Optional[float], std: Optional[float]) -> str:
    """`12.34 ± 0.56`, `12.34` for one seed, `–` for none."""
    if mean is None:
        return "–"
    return f"{mean:.2f}" if std is None else f"{mean:.2f} ± {std:.2f}"


def seeds_text(finished: int, seeds: Sequence[int], missing: Sequence[int]) -> str:
    """`2/3 (missing: 3)`: finished runs of all seeds, naming the missing ones."""
    text = f"{finished}/{len(seeds)}"
    return text + (f" (missing: {', '.join(map(str, missing))})" if missing else "")
