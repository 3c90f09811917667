"""The attention's input projections packed one after another in memory: one matrix product reads
them as a view, no copy of the weights, whatever moves the module."""

import copy
import pickle

import pytest
import torch
from torch import nn

from fairseq_struct.modules.joined_parameters import is_packed, joined, pack_adjacent
from fairseq_struct.modules.role_attention import (
    RoleAttentionOptions,
    RoleRelativeMultiheadAttention,
)

EMBED_DIM, HEADS = 16, 2


def attention(self_attention: bool = True, use_roles: bool = True, kdim=None):
    torch.manual_seed(0)
    options = RoleAttentionOptions(head_dim=EMBED_DIM // HEADS, use_roles=use_roles)
    return RoleRelativeMultiheadAttention(
        EMBED_DIM,
        HEADS,
        options,
        self_attention=self_attention,
        encoder_decoder_attention=not self_attention,
        kdim=kdim,
        vdim=kdim,
    )


def input_projections(layer):
    return [p for p in (layer.q_proj, layer.role_proj, layer.k_proj, layer.v_proj) if p]


def assert_packed(layer) -> None:
    projections = input_projections(layer)
    for name in ("weight", "bias"):
        assert is_packed([getattr(projection, name) for projection in projections]), name


def test_joined_parameters_are_a_view_and_give_each_its_gradient():
    parts = [nn.Parameter(torch.randn(rows, 5)) for rows in (3, 4, 2)]
    pack_adjacent(parts)
    view = joined(parts)
    assert view.data_ptr() == parts[0].data_ptr() and view.shape == (9, 5)
    torch.testing.assert_close(view, torch.cat([p.detach() for p in parts]), rtol=0, atol=0)
    upstream = torch.randn(9, 5)
    (view * upstream).sum().backward()
    for part, expected in zip(parts, upstream.split([3, 4, 2])):
        torch.testing.assert_close(part.grad, expected, rtol=0, atol=0)


def test_parameters_apart_are_concatenated_with_the_same_gradients():
    parts = [nn.Parameter(torch.randn(2, 3)) for _ in range(2)]
    assert not is_packed(parts)
    view = joined(parts)
    assert view.data_ptr() not in (parts[0].data_ptr(), parts[1].data_ptr())
    view.sum().backward()
    assert all(torch.equal(part.grad, torch.ones(2, 3)) for part in parts)


@pytest.mark.parametrize(
    "move",
    [
        lambda layer: layer.to(torch.float64),
        lambda layer: layer.to(torch.bfloat16),
        copy.deepcopy,
        lambda layer: pickle.loads(pickle.dumps(layer)),
    ],
    ids=["float64", "bf16", "deepcopy", "pickle"],
)
def test_moved_or_copied_layers_are_packed_again(move):
    layer = attention()
    assert_packed(layer)
    before = {name: t.detach().clone() for name, t in layer.state_dict().items()}
    moved = move(layer)
    assert_packed(moved)
    for name, tensor in moved.state_dict().items():
        torch.testing.assert_close(tensor.float(), before[name].float(), rtol=1e-2, atol=1e-2)


def test_checkpoints_keep_their_keys_and_load_into_the_packed_layout():
    """The state dict still has q_proj/role_proj/k_proj/v_proj of their own (checkpoints of
    earlier versions load), and loading writes into the packed storage."""
    layer, other = attention(), attention()
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.add_(1.0)
    state = {name: tensor.clone() for name, tensor in other.state_dict().items()}
    assert {"q_proj.weight", "role_proj.weight", "k_proj.weight", "v_proj.bias"} <= set(state)
    layer.load_state_dict(state)
    assert_packed(layer)
    for name, tensor in layer.state_dict().items():
        assert torch.equal(tensor, state[name]), name


def test_in_place_updates_reach_the_next_product():
    """An optimizer's in-place step on one parameter is what the joined product reads next."""
    layer = attention()
    x = torch.randn(5, 2, EMBED_DIM)
    with torch.no_grad():
        before, _ = layer(x, x, x, need_weights=False)
        layer.k_proj.weight.mul_(3.0)
        after, _ = layer(x, x, x, need_weights=False)
        layer.k_proj.weight.div_(3.0)
        again, _ = layer(x, x, x, need_weights=False)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(again, before)


@pytest.mark.parametrize("use_roles", [True, False], ids=["roles", "no_roles"])
def test_cross_attention_packs_the_query_and_key_sides_apart_when_their_inputs_differ(use_roles):
    layer = attention(self_attention=False, use_roles=use_roles, kdim=EMBED_DIM + 4)
    queries = [p for p in (layer.q_proj, layer.role_proj) if p]
    assert is_packed([layer.k_proj.weight, layer.v_proj.weight])
    assert len(queries) == 1 or is_packed([p.weight for p in queries])
    x, memory = torch.randn(3, 2, EMBED_DIM), torch.randn(4, 2, EMBED_DIM + 4)
    out, _ = layer(x, memory, memory, need_weights=False)
    assert out.shape == (3, 2, EMBED_DIM)


def test_a_replaced_parameter_falls_back_to_the_concatenation_with_the_same_output():
    layer = attention()
    x = torch.randn(5, 2, EMBED_DIM)
    expected, _ = layer(x, x, x, need_weights=False)
    layer.k_proj.weight = nn.Parameter(layer.k_proj.weight.detach().clone())
    assert not is_packed([p.weight for p in input_projections(layer)])
    got, _ = layer(x, x, x, need_weights=False)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
