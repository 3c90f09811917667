"""The TP-Transformer and its relative-position baseline (design.md §2): decoding, roles, sizes."""

import pytest
import torch
from fairseq.data import Dictionary
from fairseq.sequence_generator import SequenceGenerator

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary


def _dictionary(num_types: int) -> Dictionary:
    return joined_dictionary(num_types)


def _build(arch: str, dictionary: Dictionary, **overrides) -> torch.nn.Module:
    return build_model_from_arch(arch, dictionary, **overrides).eval()


def _batch(dictionary: Dictionary, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    low, high = dictionary.nspecial, len(dictionary)
    src = torch.randint(low, high, (3, 9), generator=generator)
    src[2, :3] = dictionary.pad()  # left-padded source, as fairseq batches it
    src_lengths = torch.tensor([9, 9, 6])
    tgt = torch.randint(low, high, (3, 11), generator=generator)
    prev_output_tokens = torch.cat([torch.full((3, 1), dictionary.eos()), tgt[:, :-1]], dim=1)
    return src, src_lengths, prev_output_tokens


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "transformer_relpos_tiny"])
@pytest.mark.parametrize("max_relative_positions", [16, 3])
def test_incremental_decoding_matches_full_forward(arch, max_relative_positions):
    torch.manual_seed(0)
    dictionary = _dictionary(60)
    model = _build(arch, dictionary, max_relative_positions=max_relative_positions)
    src, src_lengths, prev = _batch(dictionary)
    with torch.no_grad():
        encoder_out = model.encoder(src, src_lengths=src_lengths)
        full, _ = model.decoder(prev, encoder_out=encoder_out)
        incremental_state: dict = {}
        steps = []
        for t in range(prev.size(1)):
            out, _ = model.decoder(
                prev[:, : t + 1], encoder_out=encoder_out, incremental_state=incremental_state
            )
            steps.append(out[:, -1])
    incremental = torch.stack(steps, dim=1)
    assert torch.allclose(incremental, full, atol=1e-5), (incremental - full).abs().max()


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "transformer_relpos_tiny"])
def test_reordered_incremental_state_matches_full_forward_of_reordered_batch(arch):
    torch.manual_seed(1)
    dictionary = _dictionary(60)
    model = _build(arch, dictionary)
    src, src_lengths, prev = _batch(dictionary, seed=1)
    new_order = torch.tensor([2, 0, 0])
    with torch.no_grad():
        encoder_out = model.encoder(src, src_lengths=src_lengths)
        incremental_state: dict = {}
        for t in range(4):
            model.decoder(
                prev[:, : t + 1], encoder_out=encoder_out, incremental_state=incremental_state
            )
        model.decoder.reorder_incremental_state_scripting(incremental_state, new_order)
        encoder_out = model.encoder.reorder_encoder_out(encoder_out, new_order)
        prev = prev.index_select(0, new_order)
        out, _ = model.decoder(
            prev[:, :5], encoder_out=encoder_out, incremental_state=incremental_state
        )
        full, _ = model.decoder(prev[:, :5], encoder_out=encoder_out)
    assert torch.allclose(out[:, -1], full[:, -1], atol=1e-5)


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "transformer_relpos_tiny"])
def test_beam_search_scores_equal_teacher_forced_scores(arch):
    """fairseq's beam search (incremental state, reordering, finished sentences leaving the
    batch) gives every hypothesis the log-probabilities that a full forward pass gives it."""
    torch.manual_seed(2)
    dictionary = _dictionary(40)
    model = _build(arch, dictionary)
    src, src_lengths, _ = _batch(dictionary, seed=2)
    generator = SequenceGenerator([model], dictionary, beam_size=5, max_len_b=12)
    with torch.no_grad():
        hypotheses = generator.forward(
            {"net_input": {"src_tokens": src, "src_lengths": src_lengths}}
        )
        for sentence, hypos in enumerate(hypotheses):
            for hypo in hypos[:3]:
                tokens = hypo["tokens"].unsqueeze(0)
                prev = torch.cat([torch.tensor([[dictionary.eos()]]), tokens[:, :-1]], dim=1)
                encoder_out = model.encoder(
                    src[sentence : sentence + 1], src_lengths[sentence : sentence + 1]
                )
                logits, _ = model.decoder(prev, encoder_out=encoder_out)
                lprobs = torch.log_softmax(logits, dim=-1)
                expected = lprobs[0].gather(-1, tokens[0].unsqueeze(-1)).squeeze(-1)
                assert torch.allclose(hypo["positional_scores"], expected, atol=1e-4)


def _reference_attention(module, x, role_residual: bool):
    """Plain loops over heads, queries and keys (design.md §2.1, §2.2), for one sentence."""
    time, _, _ = x.shape
    h, d = module.num_heads, module.head_dim
    xs = x[:, 0]
    q = (xs @ module.q_proj.weight.T + module.q_proj.bias).view(time, h, d)
    k = (xs @ module.k_proj.weight.T + module.k_proj.bias).view(time, h, d)
    v = (xs @ module.v_proj.weight.T + module.v_proj.bias).view(time, h, d)
    r = (xs @ module.role_proj.weight.T + module.role_proj.bias).view(time, h, d)
    rel = module.relative_positions
    kmax = rel.max_relative_position
    z = torch.zeros(time, h, d)
    for head in range(h):
        for i in range(time):
            logits = torch.zeros(time)
            for j in range(time):
                bucket = max(-kmax, min(kmax, j - i)) + kmax
                logits[j] = q[i, head] @ (k[j, head] + rel.relative_keys[bucket]) / d**0.5
            alpha = torch.softmax(logits, dim=0)
            filler = torch.zeros(d)
            for j in range(time):
                bucket = max(-kmax, min(kmax, j - i)) + kmax
                filler += alpha[j] * (v[j, head] + rel.relative_values[bucket])
            bound = filler * r[i, head]
            z[i, head] = bound + filler if role_residual else bound
    return z.reshape(time, h * d) @ module.out_proj.weight.T + module.out_proj.bias


@pytest.mark.parametrize("role_binding", ["residual", "plain"])
def test_role_binding_matches_reference_computation(role_binding):
    torch.manual_seed(3)
    model = _build(
        "tp_transformer_tiny", _dictionary(30), role_binding=role_binding, max_relative_positions=2
    )
    attention = model.encoder.layers[0].self_attn
    # Non-zero biases so that the reference also checks where each bias enters.
    for proj in (attention.q_proj, attention.k_proj, attention.v_proj, attention.role_proj):
        torch.nn.init.normal_(proj.bias, std=0.5)
    x = torch.randn(7, 1, attention.embed_dim)
    with torch.no_grad():
        out, _ = attention(x, x, x, need_weights=False)
        expected = _reference_attention(attention, x, role_binding == "residual")
    assert torch.allclose(out[:, 0], expected, atol=1e-5)


def test_roles_change_the_output_and_residual_keeps_gradients_at_zero_roles():
    torch.manual_seed(4)
    residual = _build("tp_transformer_tiny", _dictionary(30), role_binding="residual")
    attention = residual.encoder.layers[0].self_attn
    torch.nn.init.zeros_(attention.role_proj.weight)
    torch.nn.init.zeros_(attention.role_proj.bias)
    x = torch.randn(5, 2, attention.embed_dim)
    out, _ = attention(x, x, x)
    out.sum().backward()
    # With R = 0, Z = V̄ ⊙ R + V̄ = V̄ still passes gradients to the value projection ...
    assert attention.v_proj.weight.grad.abs().sum() > 0
    plain = _build("tp_transformer_tiny", _dictionary(30), role_binding="plain")
    attention = plain.encoder.layers[0].self_attn
    torch.nn.init.zeros_(attention.role_proj.weight)
    torch.nn.init.zeros_(attention.role_proj.bias)
    out, _ = attention(x, x, x)
    out.sum().backward()
    # ... while the plain binding Z = V̄ ⊙ R blocks them (the reason for the residual).
    assert attention.v_proj.weight.grad.abs().sum() == 0


def test_role_weights_start_like_the_other_projections_or_as_asked():
    """Xavier uniform with gain 1/sqrt 2 by default (std gain * sqrt(2 / (fan_in + fan_out)) =
    sqrt(1 / 1024) for 512 -> 512), so that R has the scale of Q, K and V; `--role-init normal`
    gives N(0, 1/d_r), several times larger."""
    torch.manual_seed(5)
    attention = _build("tp_transformer_base", _dictionary(100)).encoder.layers[0].self_attn
    assert attention.role_proj.weight.std().item() == pytest.approx(1024**-0.5, rel=0.02)
    assert attention.role_proj.weight.abs().max().item() <= 1 / 512**0.5 * 3**0.5 / 2**0.5 + 1e-6
    assert attention.head_dim == 64
    normal = _build("tp_transformer_base", _dictionary(100), role_init="normal")
    role = normal.encoder.layers[0].self_attn.role_proj.weight
    assert role.std().item() == pytest.approx(64**-0.5, rel=0.02)
    # At the start, with unit-variance inputs: R of about 0.7 against 2.8.
    x = torch.randn(4096, 512)
    assert (x @ attention.role_proj.weight.T).std().item() == pytest.approx(0.5**0.5, rel=0.05)
    assert (x @ role.T).std().item() == pytest.approx(8**0.5, rel=0.05)


def test_an_unknown_role_initialisation_is_refused():
    with pytest.raises(ValueError, match="role initialisation 'zeros'"):
        _build("tp_transformer_tiny", _dictionary(100), role_init="zeros")


def test_base_parameter_counts_match_within_a_tenth_of_a_percent(capsys):
    dictionary = _dictionary(50_000)
    tp = sum(p.numel() for p in _build("tp_transformer_base", dictionary).parameters())
    relpos = sum(p.numel() for p in _build("transformer_relpos_base", dictionary).parameters())
    with capsys.disabled():
        print(
            f"\nparameters with a {len(dictionary):,}-type joined dictionary, shared embeddings:"
            f" tp_transformer_base {tp:,}, transformer_relpos_base {relpos:,}"
            f" (paper: 74,385,152 vs 74,375,936)"
        )
    assert abs(tp - relpos) / relpos < 0.001
    # The relative tables are shared across heads: (2k+1) x head_dim, k = 16.
    relative = _build("tp_transformer_base", _dictionary(10)).encoder.layers[0].self_attn
    assert relative.relative_positions.relative_keys.shape == (33, 64)


def test_relative_positions_replace_absolute_ones_by_default():
    dictionary = _dictionary(30)
    assert _build("tp_transformer_tiny", dictionary).encoder.embed_positions is None
    kept = _build("tp_transformer_tiny", dictionary, absolute_positions=True)
    assert kept.encoder.embed_positions is not None
    cross = _build("tp_transformer_tiny", dictionary).decoder.layers[0].encoder_attn
    assert cross.relative_positions is None and cross.role_proj is not None


def test_beam_cache_refuses_rows_that_are_not_beam_copies():
    """After set_beam_size(5) the cross-attention caches one row per sentence; a batch whose
    rows are not groups of identical beam copies would be mixed up, so it is refused."""
    dictionary = _dictionary(30)
    model = _build("tp_transformer_tiny", dictionary)
    model.set_beam_size(5)
    src = torch.randint(4, 30, (5, 6))
    prev = torch.full((5, 1), dictionary.eos())
    with torch.no_grad(), pytest.raises(RuntimeError, match=r"set_beam_size\(1\)"):
        encoder_out = model.encoder(src, src_lengths=torch.full((5,), 6))
        model.decoder(prev, encoder_out=encoder_out, incremental_state={})
