"""One run's evaluation in a translation grid (its `evaluate` steps): the checkpoint a rule
chooses (`grid.checkpoint_rules`), the length penalty tuned on the validation set if asked,
then the test set translated and scored by `scripts/evaluate.sh`.

--out receives the test's hyp.txt, scores.json and generate log, and selection.json; arguments
after `--` go to every fairseq-generate call. Every decode is kept in the run's `decodes/` and
reused while its checkpoint files are unchanged.
"""

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, Optional, Sequence

from fairseq_struct.commands import program_name
from fairseq_struct.corpus_io import atomic_write_json
from fairseq_struct.grid.checkpoint_rules import (
    DEFAULT_RULE,
    CheckpointRule,
    RuleError,
    best_of,
    newest,
    saved_checkpoints,
    validated_nll,
)
from fairseq_struct.grid.curves import best_update, last_update, validation_curve
from fairseq_struct.grid.steps import scripts_dir
from fairseq_struct.grid.translation_runs import LENPEN_GRID

TEST_OUTPUTS = ("hyp.txt", "scores.json", "generate-test.log")


@dataclass
class RunDecoder:
    """Decodes a run's checkpoints through scripts/evaluate.sh (its fitted length limit,
    sacreBLEU on the raw reference), each decode kept in `cache` for reuse."""

    data: Path
    tgt_lang: str
    beam: int
    generate_args: Sequence[str]
    cache: Path  # the run's decodes/

    def reference(self, subset: str) -> Path:
        return self.data / f"{subset}.raw.{self.tgt_lang}"

    def decode(self, subset: str, files: Dict[int, Path], lenpen: Optional[float] = None) -> Path:
        """The directory of `subset` decoded by the checkpoint of `files` (update -> file;
        several are averaged) with the length penalty (None: fairseq's 1.0); decoded now
        unless an earlier decode of the same unchanged files is there."""
        updates = "+".join(map(str, sorted(files)))
        lenpen = 1.0 if lenpen is None else lenpen
        out = self.cache / f"{subset}-{updates}-beam{self.beam}-lenpen{lenpen:g}"
        sources = {
            "files": [_identity(files[update]) for update in sorted(files)],
            "data": str(self.data.resolve()),
            "generate_args": list(self.generate_args),
        }
        done = out / "decoded.json"
        if done.is_file() and json.loads(done.read_text(encoding="utf-8")) == sources:
            return out
        checkpoint = next(iter(files.values()))
        if len(files) > 1:
            checkpoint = self.cache / f"average-{updates}.pt"
            # Imported here: it loads torch and fairseq, which no other rule needs in-process.
            from fairseq_struct.inference.average_checkpoints import write_average

            write_average([files[update] for update in sorted(files, reverse=True)], checkpoint)
        command = [
            "bash", str(scripts_dir() / "evaluate.sh"), str(self.data), str(checkpoint),
            str(self.reference(subset)), str(out), "--beam", str(self.beam),
            "--gen-subset", subset, "--", *self.generate_args, "--lenpen", f"{lenpen:g}",
        ]  # fmt: skip
        sys.stdout.flush()
        subprocess.run(command, check=True)
        atomic_write_json(done, sources)
        return out

    def bleu(self, subset: str, files: Dict[int, Path], lenpen: Optional[float] = None) -> float:
        scores = self.decode(subset, files, lenpen) / "scores.json"
        return float(json.loads(scores.read_text(encoding="utf-8"))["scores"]["BLEU"]["score"])


def _identity(path: Path) -> Dict[str, object]:
    status = path.stat()
    return {"path": str(path), "size": status.st_size, "mtime_ns": status.st_mtime_ns}


@dataclass
class Selection:
    rule: str
    files: Dict[int, Path]  # the chosen checkpoint(s) by update; several are averaged
    valid_nll: Dict[int, float]  # of each chosen update, from the training log
    valid_bleu_beam1: Dict[int, float]  # of each chosen update, from the training log
    # The validation score of each candidate the rule decided on (valid-bleu: beam-1 BLEU of
    # training, valid-nll: NLL, valid-bleu-beam: sacreBLEU with the test's beam), by update.
    candidates: Dict[int, float] = field(default_factory=dict)
    lenpen: Optional[float] = None  # the tuned length penalty; None: fairseq's default
    lenpen_scores: Dict[float, float] = field(default_factory=dict)  # value -> validation BLEU

    def to_json(self) -> Dict[str, object]:
        record = asdict(self)
        record["updates"] = sorted(self.files, reverse=True)  # newest first
        record["files"] = [str(self.files[update]) for update in record["updates"]]
        return record


def choose_checkpoint(rule: CheckpointRule, run: Path, decoder: RunDecoder) -> Selection:
    """The checkpoint(s) `rule` reports for the training run in `run` (checkpoints/, train.log).
    A checkpoint is named by its interval file where one has its update (checkpoint_best.pt
    and checkpoint_last.pt are copies), so that every rule's decodes of it are shared.

    Raises:
        RuleError: the run lacks what the rule needs (the message says what).
    """
    checkpoints = run / "checkpoints"
    log = run / "train.log"
    bleu = validation_curve(log, "bleu")
    nll = validation_curve(log, "nll_loss")
    final = last_update(log)
    saved = saved_checkpoints(checkpoints, final)
    candidates: Dict[int, float] = {}
    if rule.kind == "valid-bleu":
        update = best_update(bleu)
        if update is None:
            raise RuleError(f"{log}: no validation BLEU (train with --eval-bleu)")
        files = {update: saved.get(update, checkpoints / "checkpoint_best.pt")}
        candidates = dict(bleu)
    elif rule.kind == "last":
        if final is None:
            raise RuleError(f"{log}: no update logged")
        files = {final: saved.get(final, checkpoints / "checkpoint_last.pt")}
    elif rule.kind == "valid-nll":
        candidates = validated_nll(saved, nll)
        update = best_of(candidates, maximize=False)
        files = {update: saved[update]}
    elif rule.kind == "average-last":
        files = {update: saved[update] for update in newest(saved, rule.count)}
    else:  # valid-bleu-beam
        if not saved:
            raise RuleError(f"{checkpoints}: no saved checkpoint to decode the validation set with")
        candidates = {
            update: decoder.bleu("valid", {update: path}) for update, path in saved.items()
        }
        update = best_of(candidates, maximize=True)
        files = {update: saved[update]}
    for path in files.values():
        if not path.is_file():
            raise RuleError(f"{path} does not exist (the rule {rule.name} reports it)")
    return Selection(
        rule=rule.name,
        files=files,
        valid_nll={update: value for update, value in nll if update in files},
        valid_bleu_beam1={update: value for update, value in bleu if update in files},
        candidates=candidates,
    )


def best_lenpen(scores: Dict[float, float]) -> float:
    """The length penalty with the best validation BLEU; on a tie the one nearest 1.0 (no
    penalty either way), then the smaller."""
    return max(scores, key=lambda value: (scores[value], -abs(value - 1.0), -value))


def evaluate_run(
    rule: CheckpointRule, run: Path, out: Path, decoder: RunDecoder, lenpens: Sequence[float] = ()
) -> Selection:
    """Choose the checkpoint (and the length penalty among `lenpens`, if any) on the validation
    set, translate the test set with it into `out` and write `out/selection.json`."""
    selection = choose_checkpoint(rule, run, decoder)
    if lenpens:
        selection.lenpen_scores = {
            value: decoder.bleu("valid", selection.files, value) for value in lenpens
        }
        selection.lenpen = best_lenpen(selection.lenpen_scores)
    decoded = decoder.decode("test", selection.files, selection.lenpen)
    out.mkdir(parents=True, exist_ok=True)
    for name in TEST_OUTPUTS:
        shutil.copyfile(decoded / name, out / name)
    record = dict(selection.to_json(), beam=decoder.beam, decodes=str(decoded))
    atomic_write_json(out / "selection.json", record)
    return selection


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.grid.run_evaluation"),
        description="Choose a training run's checkpoint by a rule (and the length penalty on "
        "the validation set, if asked), translate the test set with it and score it.",
    )
    parser.add_argument("--run", required=True, type=Path, help="the run (checkpoints/, train.log)")
    parser.add_argument("--data", required=True, type=Path, help="its binarized data")
    parser.add_argument("--tgt-lang", required=True)
    parser.add_argument(
        "--rule", type=CheckpointRule.parse, default=CheckpointRule.parse(DEFAULT_RULE),
        help=f"valid-nll, valid-bleu, last, average-last-N or valid-bleu-beam (default: {DEFAULT_RULE})",
    )  # fmt: skip
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument(
        "--tune-lenpen", type=float, nargs="+", default=[], metavar="LENPEN",
        help=f"length penalties to try on the validation set (e.g. {' '.join(map(str, LENPEN_GRID))})",
    )  # fmt: skip
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("generate_args", nargs="*", metavar="-- GENERATE_ARGS")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    decoder = RunDecoder(
        args.data, args.tgt_lang, args.beam, args.generate_args, args.run / "decodes"
    )
    for subset in ("valid", "test"):
        if not decoder.reference(subset).is_file():
            sys.exit(f"run_evaluation: {decoder.reference(subset)} does not exist")
    try:
        evaluate_run(args.rule, args.run, args.out, decoder, args.tune_lenpen)
    except RuleError as error:
        sys.exit(f"run_evaluation: {args.run}: {error}")
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
