"""Token-classification heads of fine-tuning (`--head`; Zöllner et al., section 4; design.md §5.4):
`softmax`, `cse` (Class-Start-End), and the linear-chain CRFs `lcrf` and `lcrf_ner`.

Each computes its per-token outputs in one of two shapes (`--head-layers`): RoBERTa's
classification head per token (dropout, dense, activation, dropout, out_proj), or
BertForTokenClassification's (dropout, one linear layer). Losses and decoding work on words:
the outputs of each word's first unit (`gather_words`).
"""

from typing import List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from fairseq import utils
from torch import Tensor, nn

from fairseq_struct.modules.linear_chain_crf import LinearChainCRF, forbidden_transitions
from fairseq_struct.tagging.iob import cse_decode, entity_types, split_tag

HEAD_TYPES = ("softmax", "cse", "lcrf", "lcrf_ner")
HEAD_LAYERS = (1, 2)
OUTSIDE = "O"


IGNORED = -100  # target of the padding words, which the losses skip
BERT_INITIALIZER_RANGE = 0.02  # BertConfig's initializer_range: std of a new linear layer


def gather_words(outputs: Tensor, word_mask: Tensor) -> Tuple[Tensor, Tensor]:
    """(B, T, K) token outputs → (B, T, K) outputs of the True positions, left-aligned, and the
    (B, T) mask of real words. No loop over the batch, and no host synchronisation: the width
    stays T instead of the most words in a row (the rest is masked)."""
    counts = word_mask.sum(dim=1)
    # A stable sort puts each row's True positions first, in order.
    order = torch.sort((~word_mask).to(torch.int8), dim=1, stable=True).indices
    words = outputs.gather(1, order.unsqueeze(-1).expand(-1, -1, outputs.size(-1)))
    mask = torch.arange(word_mask.size(1), device=outputs.device).unsqueeze(0) < counts.unsqueeze(1)
    return words, mask


class TokenClassificationHead(nn.Module):
    """Per-token outputs, and the loss and decoding of one of the four heads."""

    def __init__(
        self,
        input_dim: int,
        inner_dim: int,
        labels: Sequence[str],
        head_type: str = "softmax",
        activation_fn: str = "tanh",
        pooler_dropout: float = 0.0,
        layers: int = 2,
    ) -> None:
        super().__init__()
        if head_type not in HEAD_TYPES:
            raise ValueError(f"head must be one of {HEAD_TYPES}, not {head_type!r}")
        if layers not in HEAD_LAYERS:
            raise ValueError(f"head layers must be one of {HEAD_LAYERS}, not {layers!r}")
        self.labels = list(labels)
        self.head_type = head_type
        if head_type in ("cse", "lcrf_ner"):
            for label in self.labels:
                split_tag(label)  # IOB tags only: raises ValueError naming the label
        self.classes = [OUTSIDE] + entity_types(self.labels) if head_type == "cse" else []
        outputs = 2 + len(self.classes) if head_type == "cse" else len(self.labels)
        self.dropout = nn.Dropout(p=pooler_dropout)
        if layers == 2:
            self.dense: Optional[nn.Linear] = nn.Linear(input_dim, inner_dim)
            self.activation_fn = utils.get_activation_fn(activation_fn)
            self.out_proj = nn.Linear(inner_dim, outputs)
        else:  # BERT's classifier, initialised as BERT initialises it
            self.dense = None
            self.out_proj = nn.Linear(input_dim, outputs)
            nn.init.normal_(self.out_proj.weight, std=BERT_INITIALIZER_RANGE)
            nn.init.zeros_(self.out_proj.bias)
        if head_type in ("lcrf", "lcrf_ner"):
            forbidden = forbidden_transitions(self.labels) if head_type == "lcrf_ner" else None
            self.crf = LinearChainCRF(len(self.labels), forbidden)
        if head_type == "cse":
            self._register_cse_lookups()

    def _register_cse_lookups(self) -> None:
        """Per label: starts an entity (B-), continues one (I-), its class index (O = 0)."""
        begins, insides, classes = [], [], []
        for label in self.labels:
            prefix, kind = split_tag(label)
            begins.append(prefix == "B")
            insides.append(prefix == "I")
            classes.append(self.classes.index(kind) if kind else 0)
        self.register_buffer("label_begins", torch.tensor(begins), persistent=False)
        self.register_buffer("label_inside", torch.tensor(insides), persistent=False)
        self.register_buffer("label_class", torch.tensor(classes), persistent=False)

    def forward(self, features: Tensor, **kwargs) -> Tensor:
        x = self.dropout(features)
        if self.dense is not None:
            x = self.dropout(self.activation_fn(self.dense(x)))
        return self.out_proj(x)

    # ------------------------------------------------------------------------- loss

    def word_loss(self, words: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
        """Summed loss over the real words; `labels` (B, W) are indices into `self.labels`."""
        words = words.float()
        # Padding words are ignored or zeroed, not cut out by mask indexing: that sizes a
        # tensor by the mask's values, a host synchronisation on a GPU.
        if self.head_type == "softmax":
            return F.cross_entropy(
                words.flatten(0, 1),
                labels.masked_fill(~mask, IGNORED).flatten(),
                ignore_index=IGNORED,
                reduction="sum",
            )
        if self.head_type == "cse":
            return self._cse_loss(words, labels, mask)
        return -self.crf.log_likelihood(words, labels.clamp(min=0), mask).sum()

    def cse_targets(self, labels: Tensor, mask: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """(B, W) start, end and class targets of CSE (Table 4) from IOB2 label indices."""
        labels = labels.clamp(min=0)
        starts = self.label_begins[labels] & mask
        inside = self.label_inside[labels] & mask
        classes = self.label_class[labels].masked_fill(~mask, 0)
        # An entity word is the last of its entity unless the next word continues it (I-, same
        # class); the last real word of a sentence is followed by nothing.
        next_continues = torch.zeros_like(starts)
        next_continues[:, :-1] = inside[:, 1:] & (classes[:, 1:] == classes[:, :-1])
        return starts, (starts | inside) & ~next_continues, classes

    def _cse_loss(self, words: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
        starts, ends, classes = self.cse_targets(labels, mask)
        weights = mask.to(words.dtype)
        start_loss = F.binary_cross_entropy_with_logits(
            words[..., 0], starts.to(words.dtype), weight=weights, reduction="sum"
        )  # eq. 5
        end_loss = F.binary_cross_entropy_with_logits(
            words[..., 1], ends.to(words.dtype), weight=weights, reduction="sum"
        )
        class_loss = F.cross_entropy(
            words[..., 2:].flatten(0, 1),
            classes.masked_fill(~mask, IGNORED).flatten(),
            ignore_index=IGNORED,
            reduction="sum",
        )
        return start_loss + end_loss + class_loss

    # ------------------------------------------------------------------------- decoding

    @torch.no_grad()
    def decode(self, words: Tensor, mask: Tensor) -> List[List[str]]:
        """The predicted label of every real word of every row."""
        words = words.float()
        lengths = mask.sum(dim=1).tolist()
        if self.head_type == "softmax":
            best = words.argmax(dim=-1).tolist()
            return [[self.labels[i] for i in row[:n]] for row, n in zip(best, lengths)]
        if self.head_type == "cse":
            starts = torch.sigmoid(words[..., 0]).tolist()
            ends = torch.sigmoid(words[..., 1]).tolist()
            classes = torch.softmax(words[..., 2:], dim=-1).tolist()
            return [
                cse_decode(s[:n], e[:n], c[:n], self.classes) if n else []
                for s, e, c, n in zip(starts, ends, classes, lengths)
            ]
        paths = self.crf.viterbi_decode(words, mask).tolist()
        return [[self.labels[i] for i in row[:n]] for row, n in zip(paths, lengths)]


class SpanExtractionHead(nn.Module):
    """Start and end logits of an answer span per token (BERT's SQuAD head, RoBERTa's shape)."""

    def __init__(
        self,
        input_dim: int,
        inner_dim: int,
        activation_fn: str = "tanh",
        pooler_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.dense = nn.Linear(input_dim, inner_dim)
        self.activation_fn = utils.get_activation_fn(activation_fn)
        self.dropout = nn.Dropout(p=pooler_dropout)
        self.out_proj = nn.Linear(inner_dim, 2)

    def forward(self, features: Tensor, **kwargs) -> Tensor:
        x = self.dropout(features)
        x = self.activation_fn(self.dense(x))
        return self.out_proj(self.dropout(x))
