"""The report of an encoder grid: report.md, report.json and curves.png in the grid's directory.

Pretraining, then one table per task as in the BERT2D paper: each system's main metrics as mean ±
sample standard deviation over its finished seeds, and ASO's ε_min(system, baseline) on the first.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from fairseq_struct.corpus_io import atomic_write_json
from fairseq_struct.downstream.demo_summary import MAIN_METRICS
from fairseq_struct.downstream_sets.reference_scores import reference_lines
from fairseq_struct.eval.almost_stochastic_order import (
    DEFAULT_BOOTSTRAP_ITERATIONS,
    DEFAULT_THRESHOLD,
    SystemScores,
    almost_stochastic_order,
)
from fairseq_struct.grid.curves import last_update, validation_curve
from fairseq_struct.grid.encoder_runs import ENCODERS, EncoderGrid, grid_steps
from fairseq_struct.grid.figures import plot_curves
from fairseq_struct.grid.provenance import provenance_markdown, step_commands, versions
from fairseq_struct.grid.seed_summary import mean_and_std, mean_std_text, seeds_text
from fairseq_struct.grid.steps import marker_record, wall_seconds

PRETRAINING_METRIC = "mlm_accuracy"
# The criterion's accuracy of always guessing the most frequent unit: the level a pretraining
# must leave behind to have learnt more than unit frequencies.
PRETRAINING_BASELINE = "unigram_accuracy"


@dataclass
class TaskSystem:
    encoder: str
    init: str
    scores: Dict[int, Dict[str, float]]  # seed -> metric -> value, finished runs only
    missing: List[int]
    aso: Optional[Dict[str, object]] = None
    mean: Dict[str, Optional[float]] = field(default_factory=dict)
    std: Dict[str, Optional[float]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.encoder} ({self.init})"


def _finished(directory: Path, step: str) -> bool:
    return marker_record(directory, step) is not None


def task_systems(
    grid: EncoderGrid, task: str, bootstrap_iterations: int = DEFAULT_BOOTSTRAP_ITERATIONS
) -> List[TaskSystem]:
    metrics = MAIN_METRICS[grid.task_kind(task)]
    systems = []
    for encoder in grid.systems:
        for init in grid.inits:
            scores, missing = {}, []
            for seed in grid.seeds:
                run = grid.run_dir(encoder, task, init, seed)
                if _finished(run, "predict") and (run / "scores.json").is_file():
                    record = json.loads((run / "scores.json").read_text(encoding="utf-8"))
                    scores[seed] = {metric: float(record[metric]) for metric in metrics}
                else:
                    missing.append(seed)
            system = TaskSystem(encoder, init, scores, missing)
            for metric in metrics:
                values = [seed_scores[metric] for seed_scores in scores.values()]
                system.mean[metric], system.std[metric] = mean_and_std(values)
            systems.append(system)
    _compare(systems, metrics[0], bootstrap_iterations)
    return systems


def _compare(systems: List[TaskSystem], metric: str, bootstrap_iterations: int) -> None:
    baseline = systems[0]
    base_scores = [scores[metric] for scores in baseline.scores.values()]
    for system in systems[1:]:
        scores = [seed_scores[metric] for seed_scores in system.scores.values()]
        if len(scores) < 2 or len(base_scores) < 2:
            continue  # ASO compares distributions: it needs several seeds on both sides
        result = almost_stochastic_order(
            SystemScores(system.name, scores, "grid"),
            SystemScores(baseline.name, base_scores, "grid"),
            metric=metric,
            num_bootstrap_iterations=bootstrap_iterations,
        )
        system.aso = {
            "metric": metric,
            "eps_min": result.eps_min_a_over_b,  # system better than the baseline: small
            "eps_min_baseline": result.eps_min_b_over_a,
            "verdict": result.verdict,
            "signature": result.signature,
        }


def task_table(systems: List[TaskSystem], kind: str, seeds: Sequence[int]) -> List[str]:
    metrics = MAIN_METRICS[kind]
    lines = [
        "| system | " + " | ".join(metrics) + f" | ε_min vs {systems[0].name} | seeds |",
        "|---|" + "---|" * len(metrics) + "---|---|",
    ]
    for index, system in enumerate(systems):
        if index == 0:
            comparison = "baseline"
        elif system.aso is None:
            comparison = "–"
        else:
            comparison = f"{system.aso['eps_min']:.3f}"
            if system.aso["eps_min"] < DEFAULT_THRESHOLD:
                comparison += " (better)"
            elif system.aso["eps_min_baseline"] < DEFAULT_THRESHOLD:
                comparison += " (worse)"
        seeds_cell = seeds_text(len(system.scores), seeds, system.missing)
        cells = " | ".join(mean_std_text(system.mean[m], system.std[m]) for m in metrics)
        lines.append(f"| {system.name} | {cells} | {comparison} | {seeds_cell} |")
    return lines


def pretraining_rows(grid: EncoderGrid) -> List[Dict[str, object]]:
    rows = []
    for name in grid.encoders:
        directory = grid.pretraining_dir(name)
        curve = validation_curve(directory / "train.log", metric=PRETRAINING_METRIC)
        unigram = validation_curve(directory / "train.log", metric=PRETRAINING_BASELINE)
        rows.append(
            {
                "encoder": name,
                "about": ENCODERS[name].about,
                "units": ENCODERS[name].units,
                "finished": _finished(directory, "train"),
                "updates": last_update(directory / "train.log"),
                "valid_mlm_accuracy": curve[-1][1] if curve else None,
                "valid_unigram_accuracy": unigram[-1][1] if unigram else None,
                "curve": curve,
                "seconds": wall_seconds(directory, "train"),
            }
        )
    return rows


def _value(value: Optional[float], unit: str = "") -> str:
    return "–" if value is None else f"{value:.2f}{unit}"


def write_report(
    grid: EncoderGrid,
    command_line: Sequence[str],
    bootstrap_iterations: int = DEFAULT_BOOTSTRAP_ITERATIONS,
) -> Path:
    """Write report.md, report.json and curves.png; the path of report.md. `bootstrap_iterations`
    of ASO: deepsig's default, 1,000."""
    grid.out.mkdir(parents=True, exist_ok=True)
    pretraining = pretraining_rows(grid)
    has_curves = plot_curves(
        grid.out / "curves.png",
        [(row["encoder"], row["curve"]) for row in pretraining],
        "validation masked-token accuracy (%)",
    )
    tasks: Dict[str, List[TaskSystem]] = {
        task: task_systems(grid, task, bootstrap_iterations) for task in grid.tasks
    }
    commands = step_commands(grid_steps(grid))
    system_versions = versions()
    record = {
        "grid": grid.to_json(),
        "command": list(command_line),
        "pretraining": pretraining,
        "tasks": {
            task: [_system_json(system) for system in systems] for task, systems in tasks.items()
        },
        "versions": system_versions,
        "step_commands": commands,
    }
    atomic_write_json(grid.out / "report.json", record)

    lines = _introduction(grid) + ["", *_pretraining_section(pretraining, has_curves)]
    for task, systems in tasks.items():
        lines += ["", f"## {task}", "", *task_table(systems, grid.task_kind(task), grid.seeds)]
        lines += _reported_section(task)
    lines += provenance_markdown(command_line, commands, system_versions)
    report = grid.out / "report.md"
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return report


def _reported_section(task: str) -> List[str]:
    """What the papers report on a catalogue data set, to read beside the table above."""
    references = reference_lines(task)
    if not references:
        return []
    return ["", "Reported by the papers (their models and budgets, not this grid's):", "",
            "```", *references, "```"]  # fmt: skip


def _system_json(system: TaskSystem) -> Dict[str, object]:
    return {
        "system": system.name,
        "encoder": system.encoder,
        "init": system.init,
        "scores": system.scores,
        "missing": system.missing,
        "mean": system.mean,
        "std": system.std,
        "aso": system.aso,
    }


def _introduction(grid: EncoderGrid) -> List[str]:
    """The title and what every table shows."""
    return [
        "# Encoder grid",
        "",
        f"Profile `{grid.profile}`: every encoder pretrained for {grid.pretraining_updates} "
        f"updates on the same text; fine-tuning seeds {', '.join(map(str, grid.seeds))}. Scores "
        "on each task's test file (downstream.predict), mean ± sample standard deviation over "
        "the finished seeds. ε_min: Almost Stochastic Order (deepsig, α 0.05) of the system "
        f"against the baseline on the first metric; below {DEFAULT_THRESHOLD} the system is "
        "better, and (worse) when the baseline's ε_min against it is.",
    ]


def _pretraining_section(pretraining: List[Dict[str, object]], has_curves: bool) -> List[str]:
    """The pretraining table, one row per encoder, and the curves under it if there are any."""
    lines = [
        "## Pretraining",
        "",
        "| encoder | units | updates | valid masked-token accuracy | unigram baseline | time "
        "| what |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in pretraining:
        minutes = None if row["seconds"] is None else row["seconds"] / 60
        lines.append(
            f"| {row['encoder']} | {row['units']} | {row['updates'] or '–'} | "
            f"{_value(row['valid_mlm_accuracy'], ' %')} | "
            f"{_value(row['valid_unigram_accuracy'], ' %')} | {_value(minutes, ' min')} | "
            f"{row['about']} |"
        )
    if has_curves:
        lines += ["", "![pretraining curves](curves.png)"]
    return lines
