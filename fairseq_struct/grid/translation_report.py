"""The report of a translation grid: report.md, report.json and figures in the grid's directory:
Soulos et al.'s Table 4 with paired bootstrap tests against the first system, BLEU by density
(their Figure 3), test-set statistics, curves, each run's checkpoint and length ratio, and with
--compare-rules each rule's stability (docs/reproducing.md, "Reading the report")."""

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from fairseq_struct.corpus_io import atomic_write_json
from fairseq_struct.eval.complexity import complexity_of_file
from fairseq_struct.eval.corpus_stats import file_stats
from fairseq_struct.eval.density_buckets import (
    bucket_scores,
    format_table,
    plot,
    report_to_json,
    sentence_densities,
)
from fairseq_struct.eval.score import brevity_penalty_and_ratio, read_sacrebleu_lines
from fairseq_struct.eval.significance import SIGNIFICANCE_LEVEL, paired_test
from fairseq_struct.grid.curves import best_update, last_update, validation_curve
from fairseq_struct.grid.figures import plot_curves
from fairseq_struct.grid.provenance import provenance_markdown, step_commands, versions
from fairseq_struct.grid.rule_stability import consistent_pairs, mean_seed_std, sign_agreement
from fairseq_struct.grid.seed_summary import mean_and_std, mean_std_text, seeds_text
from fairseq_struct.grid.steps import GridError, marker_record, wall_seconds
from fairseq_struct.grid.translation_runs import (
    Evaluation,
    System,
    TranslationGrid,
    evaluate_step_name,
    grid_steps,
)

METRICS = ("BLEU", "chrF", "chrF++")
# Outputs this much shorter or longer than the references: a score difference may come from
# the decoding (the checkpoint, the length penalty) rather than from the model.
LENGTH_RATIO_RANGE = (0.9, 1.1)
TESTED_METRICS = {"BLEU": "BLEU", "chrF": "chrF2"}  # our name -> sacreBLEU's paired-test name
COMPARED_METRICS = ("BLEU", "chrF")  # of the checkpoint rules' comparison
# How each rule chooses, for the report.
RULE_TEXT = {
    "valid-bleu": "the best beam-1 validation BLEU of training (checkpoint_best.pt)",
    "valid-nll": "the saved checkpoint with the lowest validation NLL",
    "last": "the last checkpoint",
    "average-last": "the newest saved checkpoints averaged",
    "valid-bleu-beam": "the saved checkpoint with the best BLEU on the validation set decoded "
    "with the test's beam",
}
LENPEN_TEXT = ", its length penalty the best on the validation set"


@dataclass
class Run:
    system: System
    seed: int
    directory: Path
    scores: Optional[Dict[str, float]]  # None: not finished
    hypotheses_path: Path
    curve: List[Tuple[int, float]]
    updates: Optional[int]
    train_seconds: Optional[float]
    evaluate_seconds: Optional[float]
    # The evaluated checkpoint (the newest of several averaged), its validation NLL (None for
    # averaged weights, never validated), the length penalty tuned on validation (None:
    # fairseq's default) and its test outputs' length.
    reported_update: Optional[int] = None
    averaged_updates: List[int] = field(default_factory=list)
    reported_valid_nll: Optional[float] = None
    lenpen: Optional[float] = None
    brevity_penalty: Optional[float] = None
    length_ratio: Optional[float] = None

    @property
    def finished(self) -> bool:
        return self.scores is not None

    @property
    def length_flag(self) -> Optional[str]:
        """ "too short" / "too long" where the test outputs' length ratio leaves
        LENGTH_RATIO_RANGE, else None."""
        if self.length_ratio is None:
            return None
        low, high = LENGTH_RATIO_RANGE
        if self.length_ratio < low:
            return "too short"
        return "too long" if self.length_ratio > high else None


@dataclass
class SystemSummary:
    system: System
    runs: List[Run]
    mean: Dict[str, Optional[float]] = field(default_factory=dict)
    std: Dict[str, Optional[float]] = field(default_factory=dict)
    # metric -> {"p_values": {seed: p}, "differences": {seed: Δ}, "p": max p, "significant":
    # bool, "seeds_disagree": bool, "difference": mean Δ}
    significance: Dict[str, Dict[str, object]] = field(default_factory=dict)

    @property
    def finished(self) -> List[Run]:
        return [run for run in self.runs if run.finished]


def collect_run(
    grid: TranslationGrid, system: System, seed: int, evaluation: Optional[Evaluation] = None
) -> Run:
    """A run's record as `evaluation` (the grid's reported one by default) evaluated it."""
    evaluation = evaluation or grid.reported
    directory = grid.run_dir(system, seed)
    eval_dir = grid.eval_dir(system, seed, evaluation)
    step = evaluate_step_name(grid, evaluation)
    scores_path = eval_dir / "scores.json"
    scores = None
    lengths = None
    if marker_record(directory, step) is not None and scores_path.is_file():
        record = json.loads(scores_path.read_text(encoding="utf-8"))
        scores = {metric: float(record["scores"][metric]["score"]) for metric in METRICS}
        lengths = brevity_penalty_and_ratio(record["scores"]["BLEU"].get("text", ""))
    log = directory / "train.log"
    curve = validation_curve(log)
    run = Run(
        system=system,
        seed=seed,
        directory=directory,
        scores=scores,
        hypotheses_path=eval_dir / "hyp.txt",
        curve=curve,
        updates=last_update(log),
        train_seconds=wall_seconds(directory, "train"),
        evaluate_seconds=wall_seconds(directory, step),
        brevity_penalty=lengths[0] if lengths else None,
        length_ratio=lengths[1] if lengths else None,
    )
    selection_path = eval_dir / "selection.json"
    if selection_path.is_file():
        selection = json.loads(selection_path.read_text(encoding="utf-8"))
        updates = [int(update) for update in selection["updates"]]
        run.reported_update = updates[0]
        run.averaged_updates = updates if len(updates) > 1 else []
        if len(updates) == 1:
            run.reported_valid_nll = selection["valid_nll"].get(str(updates[0]))
        run.lenpen = selection.get("lenpen")
    else:  # a grid evaluated before selection.json: checkpoint_best.pt by validation BLEU
        run.reported_update = best_update(curve)
        run.reported_valid_nll = dict(validation_curve(log, "nll_loss")).get(run.reported_update)
    return run


def summarise(
    grid: TranslationGrid,
    references: Optional[List[str]],
    test_type: str = "bs",
    evaluation: Optional[Evaluation] = None,
) -> List[SystemSummary]:
    summaries = [
        SystemSummary(system, [collect_run(grid, system, seed, evaluation) for seed in grid.seeds])
        for system in grid.systems
    ]
    for summary in summaries:
        finished = summary.finished
        for metric in METRICS:
            values = [run.scores[metric] for run in finished]
            summary.mean[metric], summary.std[metric] = mean_and_std(values)
    if references is not None:
        _significance(summaries, references, test_type)
    return summaries


def _significance(summaries: List[SystemSummary], references: List[str], test_type: str) -> None:
    baseline = {run.seed: run for run in summaries[0].finished}
    for summary in summaries[1:]:
        p_values: Dict[str, Dict[int, float]] = {metric: {} for metric in TESTED_METRICS}
        differences: Dict[str, Dict[int, float]] = {metric: {} for metric in TESTED_METRICS}
        for run in summary.finished:
            base = baseline.get(run.seed)
            if base is None:
                continue
            result = paired_test(
                [
                    ("baseline", read_sacrebleu_lines(str(base.hypotheses_path))),
                    (summary.system.name, read_sacrebleu_lines(str(run.hypotheses_path))),
                ],
                references,
                test_type=test_type,
            )
            tested = result.systems[1].scores
            for metric, sacrebleu_name in TESTED_METRICS.items():
                p_values[metric][run.seed] = float(tested[sacrebleu_name].p_value)
                differences[metric][run.seed] = run.scores[metric] - base.scores[metric]
        for metric in TESTED_METRICS:
            if not p_values[metric]:
                continue
            worst = max(p_values[metric].values())
            signs = {difference > 0 for difference in differences[metric].values()}
            every_seed_significant = worst < SIGNIFICANCE_LEVEL
            summary.significance[metric] = {
                "test": test_type,
                "p_values": p_values[metric],
                "differences": differences[metric],
                "p": worst,
                "significant": every_seed_significant and len(signs) == 1,
                # Each seed significant, but better in one and worse in another: no mark.
                "seeds_disagree": every_seed_significant and len(signs) > 1,
                "difference": statistics.fmean(differences[metric].values()),
            }


def _cell(summary: SystemSummary, metric: str) -> str:
    text = mean_std_text(summary.mean[metric], summary.std[metric])
    test = summary.significance.get(metric)
    if test is not None:
        disagreement = ", seeds disagree" if test["seeds_disagree"] else ""
        text += f" (p {test['p']:.3f}{disagreement})"
        if test["significant"]:
            text += "*" if test["difference"] > 0 else "†"
    return text


def _minutes(seconds: Sequence[float]) -> str:
    return f"{statistics.fmean(seconds) / 60:.1f} min" if seconds else "–"


def results_table(summaries: List[SystemSummary], seeds: Sequence[int]) -> List[str]:
    """The markdown table: systems as rows, metrics as columns."""
    lines = [
        "| system | segmentation | BLEU | chrF | chrF++ | seeds | updates | training time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for index, summary in enumerate(summaries):
        finished = summary.finished
        missing = [run.seed for run in summary.runs if not run.finished]
        seeds_cell = seeds_text(len(finished), seeds, missing)
        updates = sorted({run.updates for run in finished if run.updates is not None})
        name = summary.system.arch + (" (baseline)" if index == 0 else "")
        if any(run.length_flag for run in finished):
            name += " ‡"
        lines.append(
            f"| {name} | {summary.system.mode} | "
            + " | ".join(_cell(summary, metric) for metric in METRICS)
            + f" | {seeds_cell} | {'/'.join(map(str, updates)) or '–'} | "
            + f"{_minutes([run.train_seconds for run in finished if run.train_seconds])} |"
        )
    if any(run.length_flag for summary in summaries for run in summary.finished):
        low, high = LENGTH_RATIO_RANGE
        lines += [
            "",
            f"‡ outputs too short/long (length ratio below {low} or above {high} in a seed, "
            "see Runs): the difference may lie in decoding.",
        ]
    return lines


def compare_evaluations(grid: TranslationGrid) -> Dict[str, object]:
    """The grid's runs under each of its evaluations (checkpoint rules, tuned length penalty):
    each system's mean ± std over seeds, and how stable each evaluation keeps the comparison
    (`grid.rule_stability`). Markdown lines and the JSON record."""
    records: List[Dict[str, object]] = []
    stability_rows, system_rows = [], []
    for evaluation in grid.evaluations:
        summaries = summarise(grid, None, evaluation=evaluation)
        stability = _stability(summaries)
        name = f"`{evaluation.name}`" + (" (reported)" if evaluation == grid.reported else "")
        stability_rows.append(_stability_row(name, stability))
        system_rows += [_evaluated_system_row(name, summary) for summary in summaries]
        records.append(
            {
                "name": evaluation.name,
                "reported": evaluation == grid.reported,
                "stability": stability,
                "systems": [_summary_json(summary) for summary in summaries],
            }
        )
    return {"markdown": _comparison_markdown(stability_rows, system_rows), "json": records}


def _stability(summaries: List[SystemSummary]) -> Dict[str, Dict[str, object]]:
    """Per compared metric, how stable the systems' differences are over the seeds."""
    stability: Dict[str, Dict[str, object]] = {}
    for metric in COMPARED_METRICS:
        scores = {
            summary.system.name: {run.seed: run.scores[metric] for run in summary.finished}
            for summary in summaries
        }
        consistent, pairs = consistent_pairs(scores)
        stability[metric] = {
            "sign_agreement": sign_agreement(scores),
            "consistent_pairs": consistent,
            "pairs": pairs,
            "mean_seed_std": mean_seed_std(scores),
        }
    return stability


def _stability_row(name: str, stability: Dict[str, Dict[str, object]]) -> str:
    return (
        f"| {name} | "
        + " | ".join(_fraction(stability[m]["sign_agreement"]) for m in COMPARED_METRICS)
        + " | "
        + " | ".join(
            f"{stability[m]['consistent_pairs']}/{stability[m]['pairs']}" for m in COMPARED_METRICS
        )
        + " | "
        + " | ".join(_number(stability[m]["mean_seed_std"], ".2f") for m in COMPARED_METRICS)
        + " |"
    )


def _evaluated_system_row(name: str, summary: SystemSummary) -> str:
    finished = summary.finished
    ratios = [run.length_ratio for run in finished if run.length_ratio is not None]
    return (
        f"| {name} | {summary.system.name} | "
        + " | ".join(mean_std_text(summary.mean[m], summary.std[m]) for m in COMPARED_METRICS)
        + f" | {_number(statistics.fmean(ratios) if ratios else None, '.3f')} | "
        + ", ".join(f"{run.seed}: {_checkpoint(run)}" for run in finished)
        + " |"
    )


def _comparison_markdown(stability_rows: List[str], system_rows: List[str]) -> List[str]:
    header = " | ".join(COMPARED_METRICS)
    return [
        "## Checkpoint rules compared",
        "",
        "Every run evaluated by each rule (`--compare-rules`). Sign kept: over every pair of "
        "systems and every two seeds, how often the two seeds' differences have the same sign; "
        "consistent pairs: pairs of systems whose difference has one sign in every seed; std: "
        "a system's sample standard deviation over seeds, averaged over the systems.",
        "",
        f"| evaluation | sign kept: {header} | consistent pairs: {header} | std over seeds: "
        f"{header} |",
        "|---|" + "---|" * 3 * len(COMPARED_METRICS),
        *stability_rows,
        "",
        f"| evaluation | system | {header} | length ratio | reported checkpoint by seed |",
        "|---|---|" + "---|" * len(COMPARED_METRICS) + "---|---|",
        *system_rows,
        "",
    ]


def _fraction(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.2f}"


def test_set_statistics(grid: TranslationGrid) -> Dict[str, object]:
    """Pieces per word of the encoded test reference in each mode, morphemes per word of the
    segmented one (morph mode) and C_D of the raw reference."""
    statistics_by_mode: Dict[str, object] = {}
    raw = None
    for mode in grid.modes:
        data = grid.data_dir(mode)
        pieces = data / f"test.sp.{grid.tgt_lang}"
        if pieces.is_file():
            statistics_by_mode[f"pieces per word ({mode})"] = file_stats(str(pieces), "pieces").mean
        segmented = data / f"test.seg.{grid.tgt_lang}"
        if mode == "morph" and segmented.is_file():
            statistics_by_mode["morphemes per word"] = file_stats(str(segmented), "morphemes").mean
        if (data / f"test.raw.{grid.tgt_lang}").is_file():
            raw = data / f"test.raw.{grid.tgt_lang}"
    if raw is not None:
        statistics_by_mode["C_D (bits)"] = complexity_of_file(str(raw))["c_d_bits"]
    return statistics_by_mode


def reference_lines(grid: TranslationGrid) -> Optional[List[str]]:
    """The raw test reference, the same in every mode's data (else the grid cannot be compared).

    Raises:
        GridError: two modes kept different test pairs.
    """
    found: Optional[List[str]] = None
    for mode in grid.modes:
        path = grid.data_dir(mode) / f"test.raw.{grid.tgt_lang}"
        if not path.is_file():
            continue
        lines = read_sacrebleu_lines(str(path))
        if found is not None and lines != found:
            raise GridError(f"{path} differs from the other mode's test reference")
        found = lines
    return found


def _density(
    grid: TranslationGrid, summaries: List[SystemSummary], references: List[str]
) -> Optional[Dict[str, object]]:
    segmented = grid.data_dir("morph") / f"test.seg.{grid.tgt_lang}"
    systems = [
        (summary.system.name, read_sacrebleu_lines(str(summary.finished[0].hypotheses_path)))
        for summary in summaries
        if summary.finished
    ]
    if not segmented.is_file() or not systems:
        return None
    raw = grid.data_dir("morph") / f"test.raw.{grid.tgt_lang}"
    densities = sentence_densities(
        read_sacrebleu_lines(str(segmented)), references, str(segmented), str(raw)
    )
    report = bucket_scores(densities, references, systems)
    plot(report, str(grid.out / "density.png"))
    return {"table": format_table(report), "json": report_to_json(report)}


def write_report(grid: TranslationGrid, command_line: Sequence[str], test_type: str = "bs") -> Path:
    """Write report.md, report.json, curves.png and density.png; the path of report.md."""
    grid.out.mkdir(parents=True, exist_ok=True)
    references = reference_lines(grid)
    summaries = summarise(grid, references, test_type)
    density = _density(grid, summaries, references) if references is not None else None
    has_curves = plot_curves(
        grid.out / "curves.png",
        [(summary.system.name, run.curve) for summary in summaries for run in summary.runs],
        "validation BLEU (fairseq --eval-bleu)",
    )
    comparison = compare_evaluations(grid) if len(grid.evaluations) > 1 else None
    statistics_of_test = test_set_statistics(grid)
    system_versions = versions()
    commands = step_commands(grid_steps(grid))
    record = {
        "grid": grid.to_json(),
        "command": list(command_line),
        "baseline": grid.systems[0].name,
        "significance": {
            "test": "sacreBLEU paired bootstrap resampling (1000 resamples)",
            "level": SIGNIFICANCE_LEVEL,
            "seeds": "each seed against the baseline's run with the same seed; the largest p; "
            "significant when every seed is, in the same direction",
        },
        "systems": [_summary_json(summary) for summary in summaries],
        "test_set": statistics_of_test,
        "density": None if density is None else density["json"],
        "evaluations": None if comparison is None else comparison["json"],
        "versions": system_versions,
        "step_commands": commands,
    }
    atomic_write_json(grid.out / "report.json", record)

    lines = _introduction(grid, references) + [*results_table(summaries, grid.seeds), ""]
    lines += _test_set_section(statistics_of_test)
    lines += _density_section(density)
    if has_curves:
        lines += ["## Validation curves", "", "![validation BLEU](curves.png)", ""]
    if comparison is not None:
        lines += comparison["markdown"]
    lines += _runs_section(grid, summaries)
    lines += provenance_markdown(command_line, commands, system_versions)
    report = grid.out / "report.md"
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return report


def _introduction(grid: TranslationGrid, references: Optional[List[str]]) -> List[str]:
    """The title and what the results table shows."""
    return [
        f"# Translation grid: {grid.src_lang}→{grid.tgt_lang}",
        "",
        f"Profile `{grid.profile}`, {grid.max_update} updates for every run, seeds "
        f"{', '.join(map(str, grid.seeds))}, beam {grid.beam}; test set "
        f"{'–' if references is None else len(references)} sentences. BLEU (13a, cased), chrF "
        "and chrF++ by sacreBLEU on the raw reference: mean ± sample standard deviation over "
        "the finished seeds. (p …): sacreBLEU's paired bootstrap test (1,000 resamples) against "
        f"the baseline, the largest p over the seeds; * significantly better, † significantly "
        f'worse (p < {SIGNIFICANCE_LEVEL} for every seed, in the same direction; "seeds '
        'disagree": significantly better with one seed and worse with another).',
        "",
    ]


def _test_set_section(statistics_of_test: Dict[str, object]) -> List[str]:
    if not statistics_of_test:
        return []
    lines = ["## Test set", "", "| statistic | value |", "|---|---|"]
    lines += [f"| {name} | {value:.3f} |" for name, value in statistics_of_test.items()]
    return lines + [""]


def _density_section(density: Optional[Dict[str, object]]) -> List[str]:
    if density is None:
        return []
    return [
        "## By morphological density (Soulos et al., Figure 3)",
        "",
        "First finished seed of each system; morphemes per word of the segmented reference.",
        "",
        *density["table"],
        "",
        "![BLEU by density](density.png)",
        "",
    ]


def _runs_section(grid: TranslationGrid, summaries: List[SystemSummary]) -> List[str]:
    """Every run: finished, updates, the reported checkpoint, its validation NLL (and tuned
    length penalty), the outputs' length, the times; then the runs whose length is flagged."""
    tuned = grid.tune_lenpen
    lines = [
        "## Runs",
        "",
        f"The reported checkpoint: {RULE_TEXT[grid.reported.rule.kind]} (`--checkpoint-rule "
        f"{grid.reported.rule.name}`){LENPEN_TEXT if tuned else ''}; its validation "
        "NLL, and the length of its test outputs against the references.",
        "",
        "| run | finished | updates | reported checkpoint (update) | valid NLL | "
        + "length penalty | " * tuned
        + "length ratio (BP) | training | evaluation |",
        "|---|---|---|---|---|---|---|---|" + "---|" * tuned,
    ]
    for summary in summaries:
        for run in summary.runs:
            lenpen = f"{_number(run.lenpen, 'g')} | " * tuned
            lines.append(
                f"| {run.directory.name} | {'yes' if run.finished else 'no'} | "
                f"{_number(run.updates)} | {_checkpoint(run)} | "
                f"{_number(run.reported_valid_nll, '.3f')} | {lenpen}{_length(run)} | "
                f"{_seconds(run.train_seconds)} | {_seconds(run.evaluate_seconds)} |"
            )
    flagged = [run for summary in summaries for run in summary.runs if run.length_flag]
    if flagged:
        lines += [""] + [
            f"- {run.directory.name}: outputs {run.length_flag} (length ratio "
            f"{run.length_ratio:.3f}, outside {LENGTH_RATIO_RANGE[0]}-{LENGTH_RATIO_RANGE[1]}): "
            "the difference may lie in decoding"
            for run in flagged
        ]
    return lines


def _seconds(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.0f} s"


def _number(value: Optional[float], form: str = "d") -> str:
    return "–" if value is None else format(value, form)


def _checkpoint(run: Run) -> str:
    if run.averaged_updates:
        return "+".join(map(str, sorted(run.averaged_updates))) + " averaged"
    return _number(run.reported_update)


def _length(run: Run) -> str:
    if run.length_ratio is None or run.brevity_penalty is None:
        return "–"
    flag = f" ‡ {run.length_flag}" if run.length_flag else ""
    return f"{run.length_ratio:.3f} ({run.brevity_penalty:.3f}){flag}"


def _summary_json(summary: SystemSummary) -> Dict[str, object]:
    return {
        "name": summary.system.name,
        "mode": summary.system.mode,
        "arch": summary.system.arch,
        "mean": summary.mean,
        "std": summary.std,
        "significance": summary.significance,
        "runs": [
            {
                "seed": run.seed,
                "finished": run.finished,
                "scores": run.scores,
                "updates": run.updates,
                "reported_update": run.reported_update,
                "averaged_updates": run.averaged_updates,
                "reported_valid_nll": run.reported_valid_nll,
                "lenpen": run.lenpen,
                "length_ratio": run.length_ratio,
                "brevity_penalty": run.brevity_penalty,
                "length_flag": run.length_flag,
                "train_seconds": run.train_seconds,
                "evaluate_seconds": run.evaluate_seconds,
                "validation_bleu": run.curve,
            }
            for run in summary.runs
        ],
    }
