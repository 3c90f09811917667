"""fairseq's beam search with --max-len-a / --max-len-b applied to each sentence.

fairseq's SequenceGenerator limits every hypothesis of a batch by the batch's padded source
width, so a sentence's limit depends on what it is batched with. Here each row also ends at its
own limit, max_len_a × (its source length, end of sentence included) + max_len_b.
`translation_morph` builds this generator, so every way of decoding gives the same hypotheses.
"""

import math
from typing import Dict, List, Optional

import torch
from fairseq.sequence_generator import EnsembleModel, SequenceGenerator
from torch import Tensor


class PerSentenceLengthEnsemble(EnsembleModel):
    def __init__(self, models, max_len_a: float, max_len_b: int, eos: int) -> None:
        super().__init__(models)
        self.max_len_a = max_len_a
        self.max_len_b = max_len_b
        self.eos = eos

    @torch.jit.export
    def forward_decoder(
        self,
        tokens: Tensor,
        encoder_outs: List[Dict[str, List[Tensor]]],
        incremental_states: List[Dict[str, Dict[str, Optional[Tensor]]]],
        temperature: float = 1.0,
    ):
        lprobs, attention = super().forward_decoder(
            tokens, encoder_outs, incremental_states, temperature
        )
        if self.max_len_a > 0 and encoder_outs:
            # The padding mask is reordered with the rows (beams, finished sentences removed).
            padding = encoder_outs[0]["encoder_padding_mask"]
            if padding:
                source_lengths = (~padding[0]).sum(dim=1)
                limits = (self.max_len_a * source_lengths).long() + self.max_len_b
                # tokens holds the step's prefix: the leading end of sentence, then step tokens.
                over = limits <= tokens.size(1) - 1
                if over.any():
                    lprobs[over, : self.eos] = -math.inf
                    lprobs[over, self.eos + 1 :] = -math.inf
        return lprobs, attention


class PerSentenceLengthGenerator(SequenceGenerator):
    """SequenceGenerator whose max_len_a limit holds for each sentence of a batch."""

    def __init__(self, models, tgt_dict, max_len_a: float = 0, max_len_b: int = 200, **kwargs):
        if not isinstance(models, EnsembleModel):
            eos = tgt_dict.eos() if kwargs.get("eos") is None else kwargs["eos"]
            models = PerSentenceLengthEnsemble(models, max_len_a, max_len_b, eos)
        super().__init__(models, tgt_dict, max_len_a=max_len_a, max_len_b=max_len_b, **kwargs)
