"""Masked-LM pretraining with word structure and sentence-pair objectives (design.md §4.1, §4.4).

fairseq's `masked_lm` task on the same data, plus `--mask-strategy whole_word|random` (words from
the dictionary, `pieces.word_boundaries`; fairseq's own `--mask-whole-words` is refused) and
`--sentence-objective nsp|sop` (the label in `sample["sentence_target"]`, for a two-class head
"sentence_pair"; use `--criterion masked_lm_struct`).
"""

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fairseq import utils
from fairseq.data import (
    IdDataset,
    LRUCacheDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    RightPadDataset,
    SortDataset,
    data_utils,
)
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.masked_lm import MaskedLMConfig, MaskedLMTask

from fairseq_struct.datasets.masking import (
    MASK_STRATEGIES,
    MaskedPositionsDataset,
    MaskedWordsDataset,
    MaskingOptions,
    MostWordsDataset,
    WordStartsDataset,
)
from fairseq_struct.datasets.sentence_pairs import SentencePairDataset, SentencePairLabels
from fairseq_struct.models.struct_roberta import SENTENCE_PAIR_HEAD
from fairseq_struct.pieces.word_boundaries import special_symbol_lookup, word_start_lookup


@dataclass
class MaskedLMStructConfig(MaskedLMConfig):
    mask_strategy: ChoiceEnum(MASK_STRATEGIES) = field(  # type: ignore[valid-type]
        default="whole_word",
        metadata={"help": "mask whole words (all pieces of 15% of the words) or single pieces"},
    )
    sentence_objective: ChoiceEnum(["none", "nsp", "sop"]) = field(  # type: ignore[valid-type]
        default="none",
        metadata={
            "help": "next-sentence (nsp) or sentence-order (sop) prediction next to MLM; "
            "needs one sentence per line and documents separated by empty lines"
        },
    )
    tokens_are_words: bool = field(
        default=False,
        metadata={"help": "every token is a whole word (word-level data, e.g. for bert_elmo)"},
    )


@register_task("masked_lm_struct", dataclass=MaskedLMStructConfig)
class MaskedLMStructTask(MaskedLMTask):
    cfg: MaskedLMStructConfig

    def __init__(self, cfg: MaskedLMStructConfig, dictionary: Any = None) -> None:
        if cfg.mask_whole_words:
            raise ValueError(
                "--mask-whole-words is fairseq's own option (it needs --bpe and fails in "
                "fairseq 0.12); use --mask-strategy whole_word, which finds words from the "
                "dictionary"
            )
        if cfg.sentence_objective != "none" and cfg.tokens_per_sample < 3:
            raise ValueError("--tokens-per-sample must be at least 3 for sentence pairs")
        super().__init__(cfg, dictionary)
        self.word_start_lookup = word_start_lookup(self.dictionary, cfg.tokens_are_words)
        self.special_lookup = special_symbol_lookup(self.dictionary)
        self.masking = MaskingOptions(
            strategy=cfg.mask_strategy,
            mask_prob=cfg.mask_prob,
            leave_unmasked_prob=cfg.leave_unmasked_prob,
            random_token_prob=cfg.random_token_prob,
        )

    def build_model(self, cfg: Any, from_checkpoint: bool = False) -> Any:
        model = super().build_model(cfg, from_checkpoint)
        if self.cfg.sentence_objective != "none":
            if not hasattr(model, "register_classification_head"):
                raise ValueError(
                    f"--sentence-objective {self.cfg.sentence_objective} needs a model with "
                    "classification heads (roberta, bert2d, bert_elmo)"
                )
            model.register_classification_head(SENTENCE_PAIR_HEAD, num_classes=2)
        return model

    def _sequences(self, split: str, epoch: int, combine: bool):
        """The unmasked sequences of a split, each starting with <s>, and their pair labels."""
        if self.cfg.sentence_objective == "none":
            return self._load_dataset_split(split, epoch, combine), None
        paths = utils.split_paths(self.cfg.data)
        split_path = f"{paths[(epoch - 1) % len(paths)]}/{split}"
        sentences = data_utils.load_indexed_dataset(
            split_path, self.source_dictionary, combine=combine
        )
        if sentences is None:
            raise FileNotFoundError(f"Dataset not found: {split} ({split_path})")
        pairs = SentencePairDataset(
            sentences,
            self.cfg.sentence_objective,
            self.cfg.tokens_per_sample,
            self.source_dictionary.bos(),
            self.cfg.seed,
            split_path,
        )
        return pairs, SentencePairLabels(pairs)

    def load_dataset(
        self, split: str, epoch: int = 1, combine: bool = False, **kwargs: Any
    ) -> None:
        sequences, labels = self._sequences(split, epoch, combine)
        sequences = LRUCacheDataset(sequences)
        pad = self.source_dictionary.pad()

        def masked(view: str) -> MaskedWordsDataset:
            return MaskedWordsDataset(
                sequences,
                self.word_start_lookup,
                self.special_lookup,
                self.masking,
                self.mask_idx,
                pad,
                self.cfg.seed,
                view,
            )

        source = masked("source")
        target = masked("target")
        word_starts = WordStartsDataset(sequences, self.word_start_lookup)
        net_input = {
            "src_tokens": RightPadDataset(source, pad_idx=pad),
            "src_lengths": NumelDataset(source, reduce=False),
            # The word starts of the unmasked tokens: BERT2D's positions and Whole-Word
            # Attention see the words as they were before masking. Padding is a special
            # symbol, hence a word start (True).
            "word_starts": RightPadDataset(word_starts, pad_idx=1),
            # The most words of a sequence in the batch, a host int: it sizes Whole-Word
            # Attention's word level without a host synchronisation.
            "max_words": MostWordsDataset(word_starts),
        }
        fields = {
            "id": IdDataset(),
            "net_input": net_input,
            "target": RightPadDataset(target, pad_idx=pad),
            # The flat indices of the targets, found by the collater: the criterion needs no
            # host synchronisation to find them on a GPU.
            "masked_positions": MaskedPositionsDataset(target, pad_idx=pad),
            "nsentences": NumSamplesDataset(),
            "ntokens": NumelDataset(source, reduce=True),
        }
        if labels is not None:
            fields["sentence_target"] = labels
        with data_utils.numpy_seed(self.cfg.seed):
            shuffle = np.random.permutation(len(source))
        self.datasets[split] = SortDataset(
            NestedDictionaryDataset(fields, sizes=[sequences.sizes]),
            sort_order=[shuffle, sequences.sizes],
        )
