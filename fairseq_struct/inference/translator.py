"""A trained translation model (or an ensemble) that turns source lines into plain text.

fairseq's own pieces put together as `fairseq-interactive` and the hub put them (checkpoint
loading, the task's batches, its beam search), with `--bpe struct_sentencepiece` encoding and
decoding, so the output is what `scripts/evaluate.sh` scores and the hub's `translate` returns.
"""

import logging
import math
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from fairseq import checkpoint_utils, tasks, utils
from fairseq.dataclass.configs import GenerationConfig
from fairseq.sequence_generator import SequenceGenerator
from fairseq.tasks import TASK_REGISTRY
from fairseq.tasks.translation import TranslationTask
from fairseq_cli.generate import get_symbols_to_strip_from_output
from omegaconf import open_dict

import fairseq_struct
from fairseq_struct.encoders.struct_sentencepiece import (
    StructSentencePiece,
    StructSentencePieceConfig,
)
from fairseq_struct.inference.decoding import (
    PRECISIONS,
    DecodingOptions,
    Hypothesis,
    TranslatorError,
)
from fairseq_struct.inference.source_lines import SourceLine
from fairseq_struct.morph.length_limit import decoding_limit

fairseq_struct.register()  # the models and tasks a checkpoint names
logger = logging.getLogger(__name__)


class Translator:
    """Load once, then `translate` buffers of `SourceLine`s."""

    def __init__(
        self, checkpoints: Sequence[str], data: Optional[str], options: DecodingOptions
    ) -> None:
        if options.nbest > options.beam:
            raise TranslatorError(f"--nbest {options.nbest} is more than --beam {options.beam}")
        if options.precision not in PRECISIONS:
            raise TranslatorError(f"precision {options.precision!r}: one of {PRECISIONS}")
        self.options = options
        self.use_cuda = torch.cuda.is_available() and not options.cpu
        if options.precision != "fp32" and not self.use_cuda:
            raise TranslatorError(
                f"--{options.precision} needs a CUDA GPU (on the CPU, translation runs in fp32)"
            )
        self.data, self.task, self.models = load_ensemble(checkpoints, data)
        max_len_a, max_len_b = decoding_limit(self.data, options.max_len_a, options.max_len_b)
        generation = GenerationConfig(
            beam=options.beam,
            nbest=options.nbest,
            lenpen=options.lenpen,
            max_len_a=max_len_a,
            max_len_b=max_len_b,
        )
        for model in self.models:
            if options.precision == "fp16":
                model.half()
            elif options.precision == "bf16":
                model.to(torch.bfloat16)
            if self.use_cuda:
                model.cuda()
            # What fairseq-generate does before decoding (beam-size-aware modules, no dropout).
            model.prepare_for_inference_(SimpleNamespace(generation=generation))
        self.generator: SequenceGenerator = self.task.build_generator(self.models, generation)
        self.encoder = StructSentencePiece(
            StructSentencePieceConfig(sentencepiece_model=str(self.data / "spm.model"))
        )
        self.max_positions = utils.resolve_max_positions(
            self.task.max_positions(), *[model.max_positions() for model in self.models]
        )
        # The source's end-of-sentence token takes a position too.
        self.max_source_pieces = int(self.max_positions[0]) - 1

    def pieces(self, sentence: str) -> List[str]:
        """The source pieces of a whitespace-normalised sentence."""
        return self.encoder.encode(sentence).split()

    def translate(
        self, lines: Sequence[SourceLine]
    ) -> Iterator[Tuple[int, List[List[Hypothesis]]]]:
        """Every line of `lines` once, as soon as all its parts are translated: its position
        in `lines` and its parts' n-best lists. Empty lines come first (no parts), the others
        in the order of the length-sorted batches that finish them."""
        parts: List[Tuple[int, int]] = []  # (line position, part number) of each source
        tokens: List[torch.Tensor] = []
        results: Dict[int, List[Optional[List[Hypothesis]]]] = {}
        for position, line in enumerate(lines):
            if not line.parts:
                yield position, []
                continue
            results[position] = [None] * len(line.parts)
            for number, pieces in enumerate(line.parts):
                parts.append((position, number))
                tokens.append(
                    self.task.source_dictionary.encode_line(
                        " ".join(pieces), add_if_not_exist=False, append_eos=True
                    ).long()
                )
        if not tokens:
            return
        for ids, hypotheses in self._generate(tokens):
            for source_id, nbest in zip(ids, hypotheses):
                position, number = parts[source_id]
                line_results = results[position]
                line_results[number] = nbest
                if all(result is not None for result in line_results):
                    yield position, line_results  # type: ignore[misc]

    def _generate(self, tokens: List[torch.Tensor]) -> Iterator[Tuple[List[int], list]]:
        lengths = torch.LongTensor([t.numel() for t in tokens])
        batches = self.task.get_batch_iterator(
            dataset=self.task.build_dataset_for_inference(tokens, lengths),
            max_tokens=self.options.max_tokens,
            max_sentences=self.options.batch_size,
            max_positions=self.max_positions,
            ignore_invalid_inputs=False,
            disable_iterator_cache=True,
        ).next_epoch_itr(shuffle=False)
        ignored = get_symbols_to_strip_from_output(self.generator)
        target_dictionary = self.task.target_dictionary
        for batch in batches:
            sample = {"net_input": batch["net_input"]}
            if self.use_cuda:
                sample = utils.move_to_cuda(sample)
            output = self.task.inference_step(self.generator, self.models, sample)
            nbest_lists = []
            for hypos in output:
                nbest = []
                for hypo in hypos[: self.options.nbest]:
                    _, pieces, _ = utils.post_process_prediction(
                        hypo_tokens=hypo["tokens"].int().cpu(),
                        src_str="",
                        alignment=None,
                        align_dict=None,
                        tgt_dict=target_dictionary,
                        remove_bpe=None,
                        extra_symbols_to_ignore=ignored,
                    )
                    score = float(hypo["score"]) / math.log(2)
                    nbest.append(Hypothesis(self.encoder.decode(pieces), score))
                nbest_lists.append(nbest)
            yield batch["id"].tolist(), nbest_lists


def load_ensemble(checkpoints: Sequence[str], data: Optional[str]) -> Tuple[Path, object, list]:
    """The data directory, task and models of translation checkpoints, each file read once.

    `data` defaults to the directory the first checkpoint was trained on.

    Raises:
        TranslatorError: no checkpoint, a missing file, a checkpoint of another kind of task,
            a data directory without dictionaries or spm.model, or models that do not fit it.
    """
    if not checkpoints:
        raise TranslatorError("no checkpoint given (--path)")
    for path in checkpoints:
        if not os.path.isfile(path):
            raise TranslatorError(f"{path}: no such checkpoint file")
    overrides = {"data": str(data)} if data else {}
    state = checkpoint_utils.load_checkpoint_to_cpu(checkpoints[0], overrides)
    cfg = state["cfg"]  # load_checkpoint_to_cpu makes it from a legacy checkpoint's "args" too
    task_class = TASK_REGISTRY.get(cfg.task._name)
    if task_class is None or not issubclass(task_class, TranslationTask):
        raise TranslatorError(
            f"{checkpoints[0]}: not a translation checkpoint (its task is {cfg.task._name!r})"
        )
    data_dir = Path(cfg.task.data.split(os.pathsep)[0])
    where = "--data" if data else f"the directory {checkpoints[0]} was trained on (give --data)"
    # Without --source-lang/--target-lang in training, the task finds them from the file names.
    languages = [cfg.task.get("source_lang"), cfg.task.get("target_lang")]
    needed = [f"dict.{lang}.txt" for lang in languages if lang] + ["spm.model"]
    for name in needed:
        if not (data_dir / name).is_file():
            raise TranslatorError(
                f"{data_dir}: no {name}; the data directory must be the one the model was "
                f"prepared with (scripts/prepare-*.sh --out), read from {where}"
            )
    with open_dict(cfg):
        cfg.task.data = str(data_dir)
    try:
        task = tasks.setup_task(cfg.task)
    except Exception as error:  # fairseq raises bare Exceptions here (language pair, dictionaries)
        raise TranslatorError(
            f"{data_dir}: not a data directory of this model ({error})"
        ) from error
    models = []
    for number, path in enumerate(checkpoints):
        try:
            loaded, _, _ = checkpoint_utils.load_model_ensemble_and_task(
                [path],
                arg_overrides={"data": str(data_dir)},
                task=task,
                state=state if number == 0 else None,  # the first file is read already
            )
        except RuntimeError as error:
            raise TranslatorError(
                f"{path}: does not fit the data directory {data_dir} and the first "
                f"checkpoint's task ({str(error).splitlines()[0]})"
            ) from error
        models.extend(loaded)
    logger.info(
        "loaded %d model(s) (%s) with the data of %s",
        len(models),
        ", ".join(checkpoints),
        data_dir,
    )
    return data_dir, task, models
