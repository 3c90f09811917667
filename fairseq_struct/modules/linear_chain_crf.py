"""Linear-chain CRF over IOB tags: LCRF and LCRF_NER (Zöllner et al., 4.2; design.md §5.4).

The score of a tag path c_1..c_n of a sentence with emissions y (n, L) is Zöllner et al.'s eq. (6):

    s(c) = sum_j y[j, c_j] + sum_{j<n} T[c_j, c_{j+1}]

with no start or end transitions. LCRF learns T = W directly; LCRF_NER builds it by eq. (7),
T = (A + ω_f·F) ⊙ W − ω_a·F, from the matrix F of forbidden IOB transitions and A = 1 − F.
Training maximises log p(c | y) = s(c) − log Σ_c' exp s(c'); decoding is Viterbi's argmax.
"""

from typing import Optional, Sequence, Tuple

import torch
from torch import Tensor, nn

from fairseq_struct.tagging.iob import split_tag


def forbidden_transitions(labels: Sequence[str]) -> Tensor:
    """The (L, L) 0/1 matrix F of Zöllner et al., section 4.2, for labels in any order.

    F[i, j] = 1 iff label j is I-X and label i is neither B-X nor I-X: an inner tag may only
    follow the begin or inner tag of its own entity. In the paper's order (B-X_1..B-X_e,
    I-X_1..I-X_e, O) this is its definition "e < j <= 2e and i != j and i != j - e".
    """
    parsed = [split_tag(label) for label in labels]
    forbidden = torch.zeros(len(parsed), len(parsed))
    for j, (prefix_j, kind_j) in enumerate(parsed):
        if prefix_j != "I":
            continue
        for i, (_, kind_i) in enumerate(parsed):
            forbidden[i, j] = float(kind_i != kind_j)  # O's type is "": O -> I-X is forbidden
    return forbidden


def lcrf_ner_transitions(
    transition_weights: Tensor,
    forbidden: Tensor,
    forbidden_factor: Tensor,
    forbidden_penalty: Tensor,
) -> Tensor:
    """LCRF_NER's transitions T = (A + ω_f·F) ⊙ W − ω_a·F (eq. 7), with A = 1 − F."""
    allowed = 1.0 - forbidden
    return (
        allowed + forbidden_factor * forbidden
    ) * transition_weights - forbidden_penalty * forbidden


class LinearChainCRF(nn.Module):
    """LCRF (`forbidden is None`: T = W) or LCRF_NER (T of eq. 7) over `num_tags` tags.

    W starts at zero, so an untrained CRF scores every transition alike and its likelihood is
    the token-wise softmax of Default-Fine-Tuning; the gradient of W is the gold minus the
    expected transition counts, which is non-zero from the first step, so zeros do not stall
    learning the way they would for a hidden layer. ω_f = 1 and ω_a = 0 make eq. (7) start
    exactly as LCRF.
    """

    def __init__(self, num_tags: int, forbidden: Optional[Tensor] = None) -> None:
        super().__init__()
        self.num_tags = num_tags
        self.transition_weights = nn.Parameter(torch.zeros(num_tags, num_tags))
        if forbidden is None:
            self.forbidden = None
            return
        if forbidden.shape != (num_tags, num_tags):
            raise ValueError(
                f"forbidden transitions must be ({num_tags}, {num_tags}), "
                f"not {tuple(forbidden.shape)}"
            )
        # Derived from the label list, so it is not saved: a checkpoint never carries a copy
        # that could disagree with the labels it is loaded with.
        self.register_buffer("forbidden", forbidden.float(), persistent=False)
        self.forbidden_factor = nn.Parameter(torch.ones(()))  # ω_f of eq. (7)
        self.forbidden_penalty = nn.Parameter(torch.zeros(()))  # ω_a of eq. (7)

    def transitions(self) -> Tensor:
        """T: W for LCRF, (A + ω_f·F) ⊙ W − ω_a·F for LCRF_NER (eq. 7)."""
        if self.forbidden is None:
            return self.transition_weights
        return lcrf_ner_transitions(
            self.transition_weights, self.forbidden, self.forbidden_factor, self.forbidden_penalty
        )

    def _compute_inputs(self, emissions: Tensor) -> Tuple[Tensor, Tensor]:
        # fp16/bf16 emissions (and a .half() model) are scored in float32: the forward
        # algorithm sums n terms and exponentiates them, which half precision cannot hold.
        dtype = torch.promote_types(emissions.dtype, torch.float32)
        return emissions.to(dtype), self.transitions().to(dtype)

    def log_likelihood(self, emissions: Tensor, tags: Tensor, mask: Tensor) -> Tensor:
        """log p(tags | emissions) per row, (B,), in float32 (float64 for float64 emissions).

        emissions (B, N, L); tags (B, N) long; mask (B, N) bool, left-aligned (the first k
        positions of a row are its sentence). Tags outside the mask are ignored, whatever their
        value; a row without any position has log-likelihood 0.
        """
        emissions, transitions = self._compute_inputs(emissions)
        batch_size, length, _ = emissions.shape
        if length == 0:
            return emissions.new_zeros(batch_size)
        tags = tags.masked_fill(~mask, 0)

        # Score of the gold path, eq. (6): a transition j -> j+1 counts when j+1 is a word.
        gold_emissions = emissions.gather(-1, tags.unsqueeze(-1)).squeeze(-1)
        gold_score = torch.where(mask, gold_emissions, 0.0).sum(dim=1)
        gold_transitions = transitions[tags[:, :-1], tags[:, 1:]]
        gold_score = gold_score + torch.where(mask[:, 1:], gold_transitions, 0.0).sum(dim=1)

        # Forward algorithm: alpha[b, c] = log-sum of exp s over the prefixes ending in tag c.
        alpha = emissions[:, 0]
        for t in range(1, length):
            step = torch.logsumexp(alpha.unsqueeze(2) + transitions, dim=1) + emissions[:, t]
            alpha = torch.where(mask[:, t].unsqueeze(1), step, alpha)
        log_partition = torch.logsumexp(alpha, dim=1)
        return torch.where(mask.any(dim=1), gold_score - log_partition, 0.0)

    @torch.no_grad()
    def viterbi_decode(self, emissions: Tensor, mask: Tensor) -> Tensor:
        """The path of highest eq. (6) score per row, (B, N) long; -1 outside the mask."""
        emissions, transitions = self._compute_inputs(emissions)
        batch_size, length, _ = emissions.shape
        paths = torch.full((batch_size, length), -1, dtype=torch.long, device=emissions.device)
        if length == 0:
            return paths
        score = emissions[:, 0]
        backpointers = []
        for t in range(1, length):
            best, best_previous = (score.unsqueeze(2) + transitions).max(dim=1)
            score = torch.where(mask[:, t].unsqueeze(1), best + emissions[:, t], score)
            backpointers.append(best_previous)

        # A row's best last tag is placed at its own last word; walking back, a row only
        # follows its back-pointers once inside its sentence.
        lengths = mask.sum(dim=1)
        current = score.argmax(dim=1)
        for t in range(length - 1, -1, -1):
            inside = t < lengths
            paths[:, t] = torch.where(inside, current, -1)
            if t > 0:
                previous = backpointers[t - 1].gather(1, current.unsqueeze(1)).squeeze(1)
                current = torch.where(inside, previous, current)
        return paths
