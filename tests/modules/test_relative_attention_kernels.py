"""Shaw relative attention through flex_attention against the current gather/scatter math. The
kernels live in benchmarks/bench_relative_attention_kernels.py, loaded by file path.

fp32 must agree within 1e-5. In bf16 the outputs themselves are only resolved to 2^-8 of their
size (one ulp at 1.5 is 0.0078), and the current bf16 path is itself ~0.015 off the float64
result at these sizes, so bf16 asks instead: within 2^-6 of the largest float64 magnitude, for
both paths alike.
"""

import importlib.util
import sys
from types import ModuleType
from typing import Callable, List, Tuple

import pytest
import torch
from conftest import REPO_ROOT
from torch import Tensor

from fairseq_struct.modules.relative_position import RelativePositionEmbeddings

BENCHMARKS = REPO_ROOT / "benchmarks"
BATCH, HEADS, LENGTH, HEAD_DIM, CLIP = 2, 2, 24, 16, 3
# The second sequence ends at 15: queries 21..23 see only padding or the end in their band.
LENGTHS = [LENGTH, 15]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.fixture(scope="module")
def kernels() -> ModuleType:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCHMARKS))  # its own imports: interleaved_timing, ...
        spec = importlib.util.spec_from_file_location(
            "bench_relative_attention_kernels", BENCHMARKS / "bench_relative_attention_kernels.py"
        )
        module = importlib.util.module_from_spec(spec)
        # Registered, as an import would be: dynamo looks the module up by name when it traces.
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


def inputs(
    kernels: ModuleType,
    dtype: str,
    device: torch.device = DEVICE,
    length: int = LENGTH,
    lengths: List[int] = LENGTHS,
) -> Tuple[List, Tensor]:
    tensors, _ = kernels.make_inputs(
        BATCH, HEADS, length, HEAD_DIM, CLIP, device, DTYPES[dtype], seed=0
    )
    padding = torch.arange(length).unsqueeze(0) >= torch.tensor(lengths).unsqueeze(1)
    return tensors, padding.to(device)


def grad_out(tensors: List[Tensor]) -> Tensor:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(tensors[0].shape, generator=generator).to(tensors[0])


def float64_result(kernels: ModuleType, tensors: List[Tensor], padding: Tensor):
    wide = [t.detach().double().requires_grad_() for t in tensors]
    return kernels.forward_backward(
        kernels.shaw_attention_gather_scatter, wide, CLIP, padding, grad_out(wide)
    )


def assert_agree(actual: Tensor, expected: Tensor, wide: Tensor, dtype: str, what: str) -> None:
    """fp32: within 1e-5 of the gather/scatter path; bf16: within 2^-6 of the largest float64
    magnitude, of the float64 result."""
    if dtype == "fp32":
        torch.testing.assert_close(actual, expected, rtol=0, atol=1e-5, msg=what)
    else:
        bound = wide.abs().max().item() / 64
        torch.testing.assert_close(actual.double(), wide, rtol=0, atol=bound, msg=what)


def flex_path(kernels: ModuleType, attend: Callable, masses: str) -> Callable[..., Tensor]:
    def attention(*args: object) -> Tensor:
        return kernels.shaw_attention_flex(*args, attend=attend, masses=masses)

    return attention


def test_gather_scatter_is_the_projects_math(kernels):
    """The baseline is RelativePositionEmbeddings as role_attention.py uses it."""
    (q, k, v, rel_keys, rel_values), padding = inputs(kernels, "fp32", torch.device("cpu"))
    relative = RelativePositionEmbeddings(CLIP, HEAD_DIM)
    with torch.no_grad():
        relative.relative_keys.copy_(rel_keys)
        relative.relative_values.copy_(rel_values)
        index = relative.bucket_index(LENGTH, LENGTH, q.device)
        logits = torch.matmul(q, k.transpose(2, 3)) + relative.key_logits(q, index)
        logits = logits.masked_fill(padding.view(BATCH, 1, 1, LENGTH), float("-inf"))
        probs = torch.softmax(logits, dim=-1, dtype=torch.float32)
        expected = torch.matmul(probs, v) + relative.value_term(probs, index)
        actual = kernels.shaw_attention_gather_scatter(q, k, v, rel_keys, rel_values, CLIP, padding)
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def test_gather_scatter_matches_the_formula_pair_by_pair(kernels):
    """out_i = sum_j alpha_ij (v_j + a^V[b_ij]) with alpha from q_i . (k_j + a^K[b_ij]), float64."""
    tensors, padding = inputs(kernels, "fp32", torch.device("cpu"))
    q, k, v, rel_keys, rel_values = [t.detach().double() for t in tensors]
    index = kernels.bucket_index(LENGTH, CLIP, q.device)
    logits = torch.einsum("bhid,bhijd->bhij", q, k.unsqueeze(2) + rel_keys[index])
    logits = logits.masked_fill(padding.view(BATCH, 1, 1, LENGTH), float("-inf"))
    expected = torch.einsum(
        "bhij,bhijd->bhid", logits.softmax(-1), v.unsqueeze(2) + rel_values[index]
    )
    actual = kernels.shaw_attention_gather_scatter(q, k, v, rel_keys, rel_values, CLIP, padding)
    torch.testing.assert_close(actual, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("masses", ["lse", "split"])
def test_flex_math_with_a_dense_stand_in(kernels, masses, dtype):
    """The flex path's own math (score_mod, masks, band, edge masses) with gradients, the kernel
    replaced by a materialised equivalent: flex_attention has no backward on CPU."""
    tensors, padding = inputs(kernels, dtype, torch.device("cpu"))
    attention = flex_path(kernels, kernels.dense_attend, masses)
    expected_out, expected_grads = kernels.forward_backward(
        kernels.shaw_attention_gather_scatter, tensors, CLIP, padding, grad_out(tensors)
    )
    out, grads = kernels.forward_backward(attention, tensors, CLIP, padding, grad_out(tensors))
    wide_out, wide_grads = float64_result(kernels, tensors, padding)
    assert_agree(out, expected_out, wide_out, dtype, "output")
    for name, grad, expected, wide in zip(
        "q k v a^K a^V".split(), grads, expected_grads, wide_grads
    ):
        assert_agree(grad, expected, wide, dtype, f"gradient of {name}")


# The split layout gives the kernel 3 T keys: T = 24 (72 keys) is a length torch's compiled CPU
# kernel gets wrong at random (`cpu_flex_fault`), T = 32 (96 keys, the second sequence again
# ending 9 before the end) one it gets right.
SPLIT_LENGTHS = {24: [24, 15], 32: [32, 23]}


@pytest.mark.parametrize("length", sorted(SPLIT_LENGTHS))
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_compiled_flex_split_forward(kernels, dtype, length):
    """The real compiled kernel, forward (all CPU inductor's flex kernel does in torch 2.13). Where
    that kernel is known to be wrong, flex_attend refuses to run it and the check is skipped with
    the reason; it runs everywhere else (on CUDA at every length)."""
    tensors, padding = inputs(kernels, dtype, length=length, lengths=SPLIT_LENGTHS[length])
    detached = [t.detach() for t in tensors]
    torch._dynamo.reset()
    attention = flex_path(kernels, kernels.flex_attend(compile_mask=False), "split")
    with torch.no_grad():
        try:
            out = attention(*detached, CLIP, padding)
        except kernels.KnownKernelFault as fault:
            pytest.skip(str(fault))
        expected = kernels.shaw_attention_gather_scatter(*detached, CLIP, padding)
    wide = kernels.shaw_attention_gather_scatter(*[t.double() for t in detached], CLIP, padding)
    assert_agree(out, expected, wide, dtype, "output")


@pytest.mark.parametrize("keys", [8, 24, 72, 120, 136, 200])
def test_the_cpu_kernel_is_refused_where_torch_gets_it_wrong(kernels, keys):
    """Key lengths 8 mod 16 (benchmarks/cpu_flex_attention_fault.py) are refused on a CPU before
    anything compiles, naming the reproduction; on CUDA they run."""
    cpu = torch.device("cpu")
    reason = kernels.cpu_flex_fault(keys, cpu)
    assert reason and f"{keys} keys" in reason and "cpu_flex_attention_fault.py" in reason
    assert kernels.cpu_flex_fault(keys, torch.device("cuda")) is None
    assert kernels.cpu_flex_fault(keys + 8, cpu) is None  # a multiple of 16
    q = torch.zeros(1, 1, 4, 16)
    k = torch.zeros(1, 1, keys, 16)
    with pytest.raises(kernels.KnownKernelFault, match=f"{keys} keys"):
        kernels.flex_attend(compile_mask=False)(q, k, k, None, None, False)


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_flex_lse_forward(kernels):
    """flex_attention's lse as the lse path reads it (natural log). Compiled on CUDA; on CPU
    inductor has no lse, so there the eager flex_attention (scores materialised) stands in."""
    tensors, padding = inputs(kernels, "fp32")
    detached = [t.detach() for t in tensors]
    torch._dynamo.reset()
    attend = kernels.flex_attend(compile_kernel=DEVICE.type != "cpu", compile_mask=False)
    with torch.no_grad():
        out = flex_path(kernels, attend, "lse")(*detached, CLIP, padding)
        expected = kernels.shaw_attention_gather_scatter(*detached, CLIP, padding)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("masses", ["lse", "split"])
def test_compiled_flex_gradients(kernels, masses, dtype):
    """Forward and gradients with the real kernel; it runs where flex_attention has a backward."""
    tensors, padding = inputs(kernels, dtype)
    torch._dynamo.reset()
    attention = flex_path(kernels, kernels.flex_attend(compile_mask=False), masses)
    try:
        out, grads = kernels.forward_backward(attention, tensors, CLIP, padding, grad_out(tensors))
    except kernels.KnownKernelFault as fault:
        pytest.skip(str(fault))  # on a CPU, where flex_attention has no backward either
    except NotImplementedError as error:
        if DEVICE.type == "cpu" and "does not support backward on CPU" in str(error):
            pytest.skip(f"torch {torch.__version__}: {error}")
        raise
    expected_out, expected_grads = kernels.forward_backward(
        kernels.shaw_attention_gather_scatter, tensors, CLIP, padding, grad_out(tensors)
    )
    wide_out, wide_grads = float64_result(kernels, tensors, padding)
    assert_agree(out, expected_out, wide_out, dtype, "output")
    for name, grad, expected, wide in zip(
        "q k v a^K a^V".split(), grads, expected_grads, wide_grads
    ):
        assert_agree(grad, expected, wide, dtype, f"gradient of {name}")
