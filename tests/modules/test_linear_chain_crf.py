"""LCRF and LCRF_NER (Zöllner et al., section 4.2, eqs. 6 and 7) against brute-force enumeration."""

import itertools

import pytest
import torch

from fairseq_struct.modules.linear_chain_crf import LinearChainCRF, forbidden_transitions

# The paper's class order for two entity types: B-X1, B-X2, I-X1, I-X2, O.
PAPER_LABELS = ["B-X1", "B-X2", "I-X1", "I-X2", "O"]
LENGTHS = [4, 1, 0, 3, 2]


def path_score(emissions: torch.Tensor, transitions: torch.Tensor, path) -> torch.Tensor:
    """Eq. (6) of one path: emissions of its tags plus transitions between neighbours."""
    score = sum(emissions[j, tag] for j, tag in enumerate(path))
    return score + sum(transitions[a, b] for a, b in zip(path, path[1:]))


def brute_force(emissions: torch.Tensor, transitions: torch.Tensor, tags, length: int):
    """(log-likelihood of `tags`, best path) of one sentence by enumerating all L^n paths."""
    paths = list(itertools.product(range(emissions.size(-1)), repeat=length))
    scores = torch.stack([path_score(emissions, transitions, path) for path in paths])
    gold = paths.index(tuple(tags[:length]))
    return torch.log_softmax(scores, dim=0)[gold], list(paths[int(scores.argmax())])


def random_batch(num_tags: int, dtype=torch.float64, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    batch, width = len(LENGTHS), max(LENGTHS)
    emissions = torch.randn(batch, width, num_tags, generator=generator, dtype=dtype)
    tags = torch.randint(num_tags, (batch, width), generator=generator)
    mask = torch.arange(width).unsqueeze(0) < torch.tensor(LENGTHS).unsqueeze(1)
    return emissions, tags.masked_fill(~mask, -1), mask


def random_crf(num_tags: int, forbidden=None, seed: int = 1) -> LinearChainCRF:
    crf = LinearChainCRF(num_tags, forbidden).double()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        crf.transition_weights.copy_(torch.randn(num_tags, num_tags, generator=generator))
        if forbidden is not None:
            crf.forbidden_factor.fill_(0.7)
            crf.forbidden_penalty.fill_(1.3)
    return crf


@pytest.fixture(params=["lcrf", "lcrf_ner"])
def crf(request) -> LinearChainCRF:
    forbidden = forbidden_transitions(PAPER_LABELS) if request.param == "lcrf_ner" else None
    return random_crf(len(PAPER_LABELS), forbidden)


def test_forbidden_transitions_match_the_papers_definition():
    e = 2
    expected = torch.zeros(2 * e + 1, 2 * e + 1)
    for i, j in itertools.product(range(1, 2 * e + 2), repeat=2):  # 1-based, as in the paper
        expected[i - 1, j - 1] = float(e < j <= 2 * e and i != j and i != j - e)
    assert torch.equal(forbidden_transitions(PAPER_LABELS), expected)
    # Rows B-X1, B-X2, I-X1, I-X2, O; only the I- columns have forbidden predecessors.
    assert forbidden_transitions(PAPER_LABELS).tolist() == [
        [0, 0, 0, 1, 0],
        [0, 0, 1, 0, 0],
        [0, 0, 0, 1, 0],
        [0, 0, 1, 0, 0],
        [0, 0, 1, 1, 0],
    ]


def test_forbidden_transitions_follow_any_label_order():
    labels = ["O", "I-PER", "B-LOC", "B-PER", "I-LOC"]
    forbidden = forbidden_transitions(labels)
    for i, j in itertools.product(range(len(labels)), repeat=2):
        allowed = not labels[j].startswith("I-") or labels[i][2:] == labels[j][2:]
        assert forbidden[i, j] == float(not allowed), (labels[i], labels[j])


def test_forbidden_transitions_reject_a_non_iob_label():
    with pytest.raises(ValueError, match="'E-PER'"):
        forbidden_transitions(["O", "B-PER", "E-PER"])


def test_lcrf_transitions_are_the_weights():
    crf = random_crf(3)
    assert crf.transitions() is crf.transition_weights


def test_lcrf_ner_starts_exactly_as_lcrf():
    crf = LinearChainCRF(5, forbidden_transitions(PAPER_LABELS))
    assert crf.forbidden_factor.item() == 1.0 and crf.forbidden_penalty.item() == 0.0
    with torch.no_grad():
        crf.transition_weights.normal_()
    assert torch.equal(crf.transitions(), crf.transition_weights)


def test_lcrf_ner_transitions_follow_eq_7():
    forbidden = forbidden_transitions(PAPER_LABELS)
    crf = random_crf(5, forbidden)
    weights = crf.transition_weights.detach()
    expected = torch.empty(5, 5, dtype=torch.float64)
    for i, j in itertools.product(range(5), repeat=2):
        if forbidden[i, j]:
            expected[i, j] = 0.7 * weights[i, j] - 1.3  # ω_f·W − ω_a
        else:
            expected[i, j] = weights[i, j]  # A ⊙ W
    assert torch.allclose(crf.transitions().detach(), expected, rtol=0, atol=1e-12)


def test_parameters_and_buffer_names():
    crf = LinearChainCRF(5, forbidden_transitions(PAPER_LABELS))
    names = {name for name, _ in crf.named_parameters()}
    assert names == {"transition_weights", "forbidden_factor", "forbidden_penalty"}
    assert torch.equal(dict(crf.named_buffers())["forbidden"], forbidden_transitions(PAPER_LABELS))
    # F is derived from the labels, so checkpoints hold only the learned values.
    assert set(crf.state_dict()) == names
    assert set(LinearChainCRF(5).state_dict()) == {"transition_weights"}


def test_forbidden_matrix_of_the_wrong_shape_is_rejected():
    with pytest.raises(ValueError, match=r"\(4, 4\)"):
        LinearChainCRF(4, torch.zeros(5, 5))


def test_log_likelihood_equals_brute_force_enumeration(crf):
    emissions, tags, mask = random_batch(5)
    log_likelihood = crf.log_likelihood(emissions, tags, mask)
    assert log_likelihood.shape == (len(LENGTHS),) and log_likelihood.dtype == torch.float64
    transitions = crf.transitions().detach()
    for row, length in enumerate(LENGTHS):
        if length == 0:
            assert log_likelihood[row].item() == 0.0
            continue
        expected, _ = brute_force(emissions[row], transitions, tags[row].tolist(), length)
        assert log_likelihood[row].item() == pytest.approx(expected.item(), abs=1e-6)


def test_viterbi_equals_brute_force_argmax(crf):
    emissions, _, mask = random_batch(5, seed=2)
    paths = crf.viterbi_decode(emissions, mask)
    assert paths.dtype == torch.long
    transitions = crf.transitions().detach()
    for row, length in enumerate(LENGTHS):
        tags = [0] * length
        _, best = brute_force(emissions[row], transitions, tags, length) if length else (0, [])
        assert paths[row].tolist() == best + [-1] * (max(LENGTHS) - length)


def test_no_start_or_end_transitions_in_eq_6():
    # One word: eq. (6) has no transition term, so the CRF is the softmax of the emissions.
    crf = random_crf(3)
    emissions = torch.randn(2, 1, 3, dtype=torch.float64)
    tags = torch.tensor([[0], [2]])
    expected = torch.log_softmax(emissions[:, 0], dim=-1).gather(1, tags).squeeze(1)
    log_likelihood = crf.log_likelihood(emissions, tags, torch.ones(2, 1, dtype=torch.bool))
    assert torch.allclose(log_likelihood, expected, rtol=0, atol=1e-12)


def test_padding_tags_and_emissions_do_not_matter(crf):
    emissions, tags, mask = random_batch(5)
    reference = crf.log_likelihood(emissions, tags, mask)
    reference_paths = crf.viterbi_decode(emissions, mask)
    noisy_emissions = emissions.masked_fill(~mask.unsqueeze(-1), 1e4)
    for padding in (0, 4, 99):
        noisy_tags = tags.masked_fill(~mask, padding)
        assert torch.equal(crf.log_likelihood(noisy_emissions, noisy_tags, mask), reference)
    assert torch.equal(crf.viterbi_decode(noisy_emissions, mask), reference_paths)


def test_untrained_crf_is_the_token_wise_softmax():
    # W = 0: every path shares the same transition score, so the likelihood factorises.
    crf = LinearChainCRF(5, forbidden_transitions(PAPER_LABELS)).double()
    emissions, tags, mask = random_batch(5)
    per_token = torch.log_softmax(emissions, dim=-1).gather(-1, tags.clamp(min=0).unsqueeze(-1))
    expected = torch.where(mask, per_token.squeeze(-1), 0.0).sum(dim=1)
    assert torch.allclose(crf.log_likelihood(emissions, tags, mask), expected, atol=1e-12)


def test_gradients_reach_emissions_and_every_parameter(crf):
    emissions, tags, mask = random_batch(5)
    emissions.requires_grad_(True)
    (-crf.log_likelihood(emissions, tags, mask).sum()).backward()
    assert emissions.grad is not None and torch.isfinite(emissions.grad).all()
    assert emissions.grad[~mask].abs().max() == 0  # padding gets no gradient
    assert emissions.grad[mask].abs().max() > 0
    for name, parameter in crf.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().max() > 0, name


def test_half_emissions_are_scored_in_float32():
    crf = random_crf(5).float()
    emissions, tags, mask = random_batch(5, dtype=torch.float32)
    reference = crf.log_likelihood(emissions, tags, mask)
    half = crf.log_likelihood(emissions.half(), tags, mask)
    assert half.dtype == torch.float32
    assert torch.allclose(half, reference, atol=0.05)
    assert torch.equal(
        crf.half().viterbi_decode(emissions.half(), mask),
        crf.viterbi_decode(emissions.half().float(), mask),
    )
