"""BERT masking of whole words or single pieces (design.md §4.1): statistics on a fixed seed."""

import numpy as np
import pytest

from fairseq_struct.datasets.masking import MaskingOptions, mask_tokens

PAD, MASK, BOS, EOS = 1, 99, 0, 2


def _corpus(seed: int = 0, sentences: int = 2000):
    """Sequences of ids 10..49; id 10..19 begin words, 20..49 continue them. 4 = special."""
    rng = np.random.default_rng(seed)
    word_start_ids = np.zeros(100, dtype=bool)
    word_start_ids[[BOS, EOS, PAD, MASK, 4]] = True
    word_start_ids[10:20] = True
    special = np.zeros(100, dtype=bool)
    special[[BOS, EOS, PAD, MASK, 4]] = True
    corpus = []
    for _ in range(sentences):
        tokens = [BOS]
        for _ in range(rng.integers(3, 15)):
            tokens.append(int(rng.integers(10, 20)))
            tokens.extend(int(t) for t in rng.integers(20, 50, size=rng.integers(0, 4)))
        tokens.append(EOS)
        corpus.append(np.array(tokens))
    return corpus, word_start_ids, special


def _words(tokens, word_start_ids):
    starts = np.flatnonzero(word_start_ids[tokens])
    return np.split(np.arange(len(tokens)), starts[1:])


@pytest.mark.parametrize("strategy", ["whole_word", "random"])
def test_masking_statistics(strategy):
    corpus, word_start_ids, special = _corpus()
    options = MaskingOptions(strategy=strategy)
    replacement_ids = np.flatnonzero(~special)
    units = chosen = masked = randomised = kept = 0
    for index, tokens in enumerate(corpus):
        rng = np.random.default_rng((1, 0, index))
        source, target = mask_tokens(
            tokens,
            word_start_ids[tokens],
            special[tokens],
            options,
            MASK,
            PAD,
            replacement_ids,
            rng,
        )
        is_target = target != PAD
        assert (target[is_target] == tokens[is_target]).all()
        assert not is_target[special[tokens]].any(), "a special symbol became a target"
        groups = (
            _words(tokens, word_start_ids)
            if strategy == "whole_word"
            else [np.array([i]) for i in range(len(tokens))]
        )
        for group in groups:
            if special[tokens[group]].any():
                continue
            units += 1
            if not is_target[group].any():
                assert (source[group] == tokens[group]).all()
                continue
            assert is_target[group].all(), "part of a word was masked"
            chosen += 1
            if (source[group] == MASK).all():
                masked += 1
            elif (source[group] == tokens[group]).all():
                kept += 1  # unchanged, or (rarely) replaced by the same ids
            else:
                assert not (source[group] == MASK).any()
                randomised += 1
    assert chosen / units == pytest.approx(0.15, abs=0.01)
    assert masked / chosen == pytest.approx(0.8, abs=0.03)
    assert randomised / chosen == pytest.approx(0.1, abs=0.03)
    assert kept / chosen == pytest.approx(0.1, abs=0.03)


def test_same_seed_same_masks_other_epoch_other_masks():
    corpus, word_start_ids, special = _corpus(sentences=1)
    tokens = np.concatenate([corpus[0]] * 10)
    options = MaskingOptions()

    def run(key):
        return mask_tokens(
            tokens,
            word_start_ids[tokens],
            special[tokens],
            options,
            MASK,
            PAD,
            np.flatnonzero(~special),
            np.random.default_rng(key),
        )[1]

    assert (run((1, 1, 0)) == run((1, 1, 0))).all()
    assert not (run((1, 1, 0)) == run((1, 2, 0))).all()


def test_invalid_options_are_refused():
    with pytest.raises(ValueError, match="mask strategy"):
        MaskingOptions(strategy="span")
    with pytest.raises(ValueError, match="sum to <= 1"):
        MaskingOptions(leave_unmasked_prob=0.6, random_token_prob=0.6)
