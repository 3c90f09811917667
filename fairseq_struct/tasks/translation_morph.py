"""Translation on SentencePiece or morpheme-segmented data, scored on plain words (design.md §2.4).

fairseq's `translation` task (so `--eval-bleu`, BLEU-based checkpoint selection and early
stopping work), whose detokenized text (`--eval-bleu`, the `D-` lines and `--scoring` of
fairseq-generate) is first turned back into plain words: pieces joined, boundary marks removed.
"""

from dataclasses import dataclass, field

from fairseq.logging import metrics
from fairseq.tasks import register_task
from fairseq.tasks.translation import EVAL_BLEU_ORDER, TranslationConfig, TranslationTask

from fairseq_struct.generation.per_sentence_length import PerSentenceLengthGenerator
from fairseq_struct.pieces.markers import pieces_to_text

_BLEU_TOTALS = tuple(f"_bleu_totals_{order}" for order in range(EVAL_BLEU_ORDER))


class PiecesToText:
    """fairseq "bpe" object that turns generated pieces back into the original words."""

    def encode(self, x: str) -> str:
        raise ValueError(
            "translation_morph cannot encode raw text by itself: pass the SentencePiece model "
            "that prepared the data, e.g. --bpe sentencepiece --sentencepiece-model "
            "data-bin/en-tr/spm.model (the English source is never segmented)"
        )

    def decode(self, x: str) -> str:
        return pieces_to_text(x)

    def is_beginning_of_word(self, x: str) -> bool:
        return x.startswith("\u2581")


@dataclass
class TranslationMorphConfig(TranslationConfig):
    detokenize_output: bool = field(
        default=True,
        metadata={
            "help": "turn generated SentencePiece pieces back into plain words (join pieces, "
            "drop morpheme boundary marks) for --eval-bleu, D- lines and --scoring; the H- "
            "lines of fairseq-generate keep the pieces"
        },
    )


@register_task("translation_morph", dataclass=TranslationMorphConfig)
class TranslationMorphTask(TranslationTask):
    cfg: TranslationMorphConfig

    def build_model(self, cfg, from_checkpoint=False):
        if self.cfg.eval_bleu and self.cfg.eval_bleu_remove_bpe and self.cfg.detokenize_output:
            raise ValueError(
                "translation_morph detokenizes the pieces itself: drop --eval-bleu-remove-bpe "
                "(or pass --no-detokenize-output to use fairseq's own post-processing)"
            )
        model = super().build_model(cfg, from_checkpoint)
        if self.cfg.eval_bleu and self.cfg.detokenize_output:
            # Replaces --eval-bleu-detok: the pieces already are the original text.
            self.tokenizer = PiecesToText()
        return model

    def build_generator(self, models, args, seq_gen_cls=None, extra_gen_cls_kwargs=None, **kwargs):
        # --max-len-a per sentence, not per batch (generation/per_sentence_length.py); fairseq's
        # own generator where alignments are asked for.
        if seq_gen_cls is None and not getattr(args, "print_alignment", False):
            seq_gen_cls = PerSentenceLengthGenerator
        return super().build_generator(models, args, seq_gen_cls, extra_gen_cls_kwargs, **kwargs)

    def build_bpe(self, args):
        if args is None and self.cfg.detokenize_output:
            return PiecesToText()
        return super().build_bpe(args)

    def reduce_metrics(self, logging_outputs, criterion):
        super().reduce_metrics(logging_outputs, criterion)
        # fairseq logs no `bleu` when every validation hypothesis is empty, and
        # --best-checkpoint-metric bleu then stops with KeyError: log sacreBLEU's 0 instead.
        totals = [log[key] for log in logging_outputs for key in _BLEU_TOTALS if key in log]
        if self.cfg.eval_bleu and totals and not any(totals):
            metrics.log_scalar("bleu", 0.0)
