"""How a grid chooses each run's checkpoint: the rules on a small fixed run (known validation
curves, known best), the length penalty's choice and the stability figures of a rule comparison.

The run is files on disk (a fairseq-train log, checkpoint files whose contents no rule reads);
the one rule that decodes (valid-bleu-beam) gets known validation scores from a decoder that
records what it was asked. Real decoding is in test_translation_grid.py."""

import statistics
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from fairseq_struct.grid.checkpoint_rules import (
    CheckpointRule,
    RuleError,
    best_of,
    saved_checkpoints,
)
from fairseq_struct.grid.rule_stability import consistent_pairs, mean_seed_std, sign_agreement
from fairseq_struct.grid.run_evaluation import RunDecoder, best_lenpen, choose_checkpoint
from fairseq_struct.grid.translation_runs import (
    Evaluation,
    System,
    TranslationGrid,
    evaluate_step,
    evaluate_step_name,
    train_step,
)

# update -> (beam-1 validation BLEU, validation NLL): each rule has its own answer.
CURVES = {250: (1.0, 6.0), 500: (9.6, 4.2), 750: (9.4, 4.0), 1000: (9.5, 4.1)}
VALID_BLEU_WITH_BEAM = {250: 0.5, 500: 7.0, 750: 7.9, 1000: 7.9}  # a tie: the later one


def write_run(run: Path, kept=(250, 500, 750, 1000), curves=CURVES) -> Path:
    checkpoints = run / "checkpoints"
    checkpoints.mkdir(parents=True)
    for update in kept:
        (checkpoints / f"checkpoint_{update // 250}_{update}.pt").write_bytes(b"weights")
    for copy in ("checkpoint_best.pt", "checkpoint_last.pt"):
        (checkpoints / copy).write_bytes(b"weights")
    log = [
        f"2026-11-28 10:00:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 5.0 | "
        f"nll_loss {nll} | ppl 20 | bleu {bleu} | wps 100 | num_updates {update}"
        for update, (bleu, nll) in curves.items()
    ]
    (run / "train.log").write_text("\n".join(log) + "\n", encoding="utf-8")
    return run


class KnownScores(RunDecoder):
    """Validation BLEU with the test's beam as given, each request recorded."""

    def __init__(self, scores: Dict[int, float]):
        super().__init__(Path("data"), "tr", 5, (), Path("decodes"))
        self.scores = scores
        self.asked: List[Tuple[str, Tuple[int, ...], Optional[float]]] = []

    def bleu(self, subset, files, lenpen=None) -> float:
        self.asked.append((subset, tuple(sorted(files)), lenpen))
        (update,) = files
        return self.scores[update]


def chosen(rule: str, run: Path, decoder: Optional[RunDecoder] = None) -> Dict[int, str]:
    selection = choose_checkpoint(CheckpointRule.parse(rule), run, decoder or KnownScores({}))
    return {update: path.name for update, path in selection.files.items()}


def test_each_rule_chooses_its_checkpoint_on_known_curves(tmp_path):
    run = write_run(tmp_path / "run")
    # fairseq's best (>=) BLEU is at 500; named by its interval file, whose copy it is
    assert chosen("valid-bleu", run) == {500: "checkpoint_2_500.pt"}
    assert chosen("valid-nll", run) == {750: "checkpoint_3_750.pt"}
    assert chosen("last", run) == {1000: "checkpoint_4_1000.pt"}
    assert chosen("average-last-2", run) == {
        1000: "checkpoint_4_1000.pt",
        750: "checkpoint_3_750.pt",
    }
    assert chosen("average-last-4", run) == {u: f"checkpoint_{u // 250}_{u}.pt" for u in CURVES}
    decoder = KnownScores(VALID_BLEU_WITH_BEAM)
    assert chosen("valid-bleu-beam", run, decoder) == {1000: "checkpoint_4_1000.pt"}
    assert decoder.asked == [("valid", (update,), None) for update in CURVES]


def test_the_selection_records_the_scores_it_chose_by(tmp_path):
    run = write_run(tmp_path / "run")
    selection = choose_checkpoint(CheckpointRule.parse("valid-nll"), run, KnownScores({}))
    assert selection.candidates == {u: nll for u, (_, nll) in CURVES.items()}
    assert (selection.valid_nll, selection.valid_bleu_beam1) == ({750: 4.0}, {750: 9.4})
    record = selection.to_json()
    assert (record["updates"], record["rule"]) == ([750], "valid-nll")
    assert record["files"] == [str(run / "checkpoints" / "checkpoint_3_750.pt")]


def test_without_interval_checkpoints_the_copies_are_reported(tmp_path):
    """The cpu profile keeps one interval checkpoint: the best validation BLEU (500) is then
    only checkpoint_best.pt; the last update's checkpoint_last.pt is a saved one."""
    run = write_run(tmp_path / "run", kept=(1000,))
    assert chosen("valid-bleu", run) == {500: "checkpoint_best.pt"}
    run = write_run(tmp_path / "none", kept=())
    assert chosen("last", run) == {1000: "checkpoint_last.pt"}
    assert chosen("valid-nll", run) == {1000: "checkpoint_last.pt"}  # the only one saved
    assert saved_checkpoints(run / "checkpoints", 1000) == {
        1000: run / "checkpoints" / "checkpoint_last.pt"
    }


def test_a_rule_the_run_cannot_serve_says_what_to_train_with(tmp_path):
    run = write_run(tmp_path / "run", kept=(1000,))
    with pytest.raises(
        RuleError, match="3 checkpoints to average, but the run saved 1 .*--keep-interval-updates 3"
    ):
        chosen("average-last-3", run)
    no_bleu = write_run(tmp_path / "no-bleu", curves={})
    with pytest.raises(RuleError, match="no validation BLEU"):
        chosen("valid-bleu", no_bleu)
    with pytest.raises(RuleError, match="none of the saved checkpoints"):
        chosen("valid-nll", no_bleu)


@pytest.mark.parametrize("spec", ["best", "average-last-1", "average-last-x", "valid-bleu+lenpen"])
def test_unknown_rules_are_refused_with_the_choices(spec):
    with pytest.raises(
        RuleError, match="expected one of valid-bleu, valid-nll, last, average-last-N"
    ):
        CheckpointRule.parse(spec)


def test_evaluations_parse_a_rule_and_the_length_penalty():
    assert Evaluation.parse("valid-nll+lenpen") == Evaluation(CheckpointRule("valid-nll"), True)
    assert Evaluation.parse("average-last-3").rule == CheckpointRule("average-last", 3)
    assert Evaluation.parse("average-last-3").name == "average-last-3"
    with pytest.raises(RuleError, match="only '\\+lenpen' may follow"):
        Evaluation.parse("last+beam")


def test_ties_go_to_the_later_checkpoint_and_the_length_penalty_nearest_one():
    assert best_of({500: 4.0, 750: 4.0, 1000: 4.5}, maximize=False) == 750
    assert best_of({500: 9.0, 750: 9.0}, maximize=True) == 750
    assert best_lenpen({0.6: 10.0, 1.0: 11.0, 1.2: 11.0, 2.0: 10.5}) == 1.0
    assert best_lenpen({0.8: 11.0, 1.2: 11.0, 2.0: 12.0}) == 2.0
    assert best_lenpen({0.8: 11.0, 1.2: 11.0}) == 0.8  # as near 1.0: the smaller


def grid_with(tmp_path, **settings) -> TranslationGrid:
    return TranslationGrid("raw/train", "raw/valid", "raw/test", "tr", tmp_path, **settings)


def test_training_keeps_the_checkpoints_the_rules_need(tmp_path):
    system = System("bpe", "tp_transformer")

    def keep(**settings) -> Optional[str]:
        command = train_step(grid_with(tmp_path, **settings), system, 1, Path("scripts")).command
        found = [i for i, part in enumerate(command) if part == "--keep-interval-updates"]
        return command[found[0] + 1] if found else None

    assert keep() == "-1"  # the default, valid-bleu-beam: every saved checkpoint a candidate
    assert keep(checkpoint_rule="valid-bleu") is None  # checkpoint_best.pt
    assert keep(checkpoint_rule="last", compare=("valid-bleu+lenpen",)) is None
    assert keep(checkpoint_rule="last", compare=("average-last-3", "last")) == "3"
    assert keep(compare=("average-last-3",)) == "-1"
    # the paper profile keeps 2 interval checkpoints itself
    assert keep(checkpoint_rule="last", profile="paper", compare=("average-last-2",)) is None
    assert keep(train_args=("--keep-interval-updates", "5")) == "5"  # the options' own
    assert keep(train_args=("--keep-interval-updates=5",)) is None


def test_each_evaluation_has_its_step_and_directory(tmp_path):
    grid = grid_with(
        tmp_path,
        checkpoint_rule="last",
        tune_lenpen=True,
        lenpen_grid=(1.0, 1.5),
        compare=("valid-nll", "last+lenpen"),
    )
    assert [e.name for e in grid.evaluations] == ["last+lenpen", "valid-nll"]  # each once
    system = System("bpe", "tp_transformer")
    reported, compared = grid.evaluations
    assert (
        grid.eval_dir(system, 2, reported)
        == tmp_path / "runs" / "bpe-tp_transformer-seed2" / "eval"
    )
    assert grid.eval_dir(system, 2, compared).name == "eval-valid-nll"
    assert (evaluate_step_name(grid, reported), evaluate_step_name(grid, compared)) == (
        "evaluate",
        "evaluate-valid-nll",
    )
    command = evaluate_step(grid, system, 2, reported).command
    assert command[command.index("--rule") + 1] == "last"
    assert command[command.index("--tune-lenpen") + 1 :][:2] == ["1", "1.5"]
    assert "--tune-lenpen" not in evaluate_step(grid, system, 2, compared).command


SCORES = {"A": {1: 10.0, 2: 12.0, 3: 11.0}, "B": {1: 9.0, 2: 13.0, 3: 10.0}, "C": {1: 5.0, 2: 6.0}}


def test_stability_figures_of_known_scores():
    # A-B: +1 -1 +1 (seed pairs agree 1 of 3); A-C: +5 +6 (1 of 1); B-C: +4 +7 (1 of 1)
    assert sign_agreement(SCORES) == pytest.approx(3 / 5)
    assert consistent_pairs(SCORES) == (2, 3)
    spreads = [statistics.stdev(by_seed.values()) for by_seed in SCORES.values()]
    assert mean_seed_std(SCORES) == pytest.approx(statistics.fmean(spreads))
    one_seed = {"A": {1: 10.0}, "B": {1: 9.0}}
    assert sign_agreement(one_seed) is None and mean_seed_std(one_seed) is None
    assert consistent_pairs(one_seed) == (0, 0)
