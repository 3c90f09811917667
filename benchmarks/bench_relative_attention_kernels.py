"""Shaw relative self-attention: the current gather/scatter math vs flex_attention.

Both compute, from q (scaled by head_dim**-0.5), k, v (B, H, T, d), the tables a^K, a^V (2k+1, d)
and a key padding mask (B, T), True at padding:

    out_i = sum_j alpha_ij (v_j + a^V[b_ij]),   b_ij = clip(j - i, -k, k) + k,
    alpha_i = softmax_j(q_i . k_j + q_i . a^K[b_ij]), padded keys at -inf.

`.venv/bin/python benchmarks/bench_relative_attention_kernels.py --lengths 128 512` prints one
JSON line per length: milliseconds, peak memory and agreement of both. The flex variants
(`--masses`), the fields and the figures: benchmarks/README.md#bench_relative_attention_kernelspy.
"""

import argparse
import json
import logging
import statistics
import sys
import time
import warnings
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from bench_whole_word_attention import peak_memory_bytes
from interleaved_timing import add_repetition_arguments, set_up, synchronize, timed
from torch import Tensor
from torch.nn.attention.flex_attention import AuxRequest, create_block_mask, flex_attention

logger = logging.getLogger("bench_relative_attention_kernels")

MIB = 2**20
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
TOLERANCE = {"fp32": 1e-5, "bf16": 1e-3}
MASS_MODES = ("lse", "split")

ScoreMod = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
MaskMod = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
# (q, k, v, score_mod, mask_mod, need_lse) -> (out, lse or None), flex_attention's semantics.
Attend = Callable[
    [Tensor, Tensor, Tensor, ScoreMod, MaskMod, bool], Tuple[Tensor, Optional[Tensor]]
]
ShawAttention = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor, int, Tensor], Tensor]


def bucket_index(length: int, clip: int, device: torch.device) -> Tensor:
    """(T, T) table of clip(j - i, -k, k) + k, as `RelativePositionEmbeddings.bucket_index`."""
    positions = torch.arange(length, device=device)
    return (positions.unsqueeze(0) - positions.unsqueeze(1)).clamp(-clip, clip) + clip


def shaw_attention_gather_scatter(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    rel_keys: Tensor,
    rel_values: Tensor,
    clip: int,
    key_padding_mask: Tensor,
) -> Tensor:
    """The current implementation's math (role_attention.py + relative_position.py)."""
    batch, heads, length, _ = q.shape
    index = bucket_index(length, clip, q.device).expand(batch, heads, length, length)
    logits = torch.matmul(q, k.transpose(2, 3))
    logits = logits + torch.matmul(q, rel_keys.transpose(0, 1)).gather(-1, index)
    logits = logits.masked_fill(key_padding_mask.view(batch, 1, 1, length), float("-inf"))
    # fp32 as role_attention does (float64 stays float64, for the reference).
    probs = F.softmax(logits, dim=-1, dtype=torch.promote_types(logits.dtype, torch.float32))
    probs = probs.type_as(logits)
    bucket_probs = probs.new_zeros(batch, heads, length, 2 * clip + 1)
    bucket_probs.scatter_add_(-1, index, probs)
    return torch.matmul(probs, v) + torch.matmul(bucket_probs, rel_values)


class KnownKernelFault(RuntimeError):
    """The compiled kernel is known to compute wrong values for these inputs on this device."""


# torch's compiled flex_attention on a CPU (inductor's C++ template; torch 2.13.0, AVX2, one thread
# or two) returns wrong rows at random, off by up to 1.5 or NaN, when the number of keys is 8 more
# than a multiple of 16 (8, 24, 72, 136, 200, ...): plain attention shows it, with no mask and no
# score_mod, while 16, 48, 65, 96, 127 keys agree with SDPA to 3e-7. Reproduction, as an upstream
# report needs it: benchmarks/cpu_flex_attention_fault.py.
def cpu_flex_fault(keys: int, device: torch.device) -> Optional[str]:
    """Why the compiled CPU flex_attention kernel must not run on `keys` keys, or None."""
    if device.type != "cpu" or keys % 16 != 8:
        return None
    return (
        f"torch {torch.__version__}: compiled flex_attention on a CPU returns wrong rows at "
        f"random for {keys} keys (8 mod 16); reproduction: "
        "python benchmarks/cpu_flex_attention_fault.py"
    )


def flex_attend(compile_kernel: bool = True, compile_mask: bool = True) -> Attend:
    """flex_attention (torch.compile'd: the eager one materialises the scores) with a block mask
    made on every call, as the padding changes from batch to batch (compiled, that takes 0.15 s
    instead of 0.45 s on CPU at T = 2048 with the split layout). Compiled on a CPU, it refuses
    (`KnownKernelFault`) the key lengths that kernel gets wrong (`cpu_flex_fault`)."""
    kernel = torch.compile(flex_attention, dynamic=False) if compile_kernel else flex_attention
    make_mask = (
        torch.compile(create_block_mask, dynamic=False) if compile_mask else create_block_mask
    )

    def attend(
        q: Tensor, k: Tensor, v: Tensor, score_mod: ScoreMod, mask_mod: MaskMod, need_lse: bool
    ) -> Tuple[Tensor, Optional[Tensor]]:
        fault = cpu_flex_fault(k.size(2), k.device) if compile_kernel else None
        if fault:
            raise KnownKernelFault(fault)
        block_mask = make_mask(mask_mod, q.size(0), None, q.size(2), k.size(2), device=q.device)
        if not need_lse:
            return kernel(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=1.0), None
        out, aux = kernel(
            q,
            k,
            v,
            score_mod=score_mod,
            block_mask=block_mask,
            scale=1.0,
            return_aux=AuxRequest(lse=True),
        )
        return out, aux.lse

    return attend


def dense_attend(
    q: Tensor, k: Tensor, v: Tensor, score_mod: ScoreMod, mask_mod: MaskMod, need_lse: bool
) -> Tuple[Tensor, Optional[Tensor]]:
    """flex_attention's semantics with a materialised (B, H, T, S) score matrix in fp32.

    A stand-in with autograd on CPU, to check the flex path's own math (band, masses) with
    gradients where flex_attention has no backward. Rows without any allowed key give out 0 and
    lse -inf, as flex_attention does.
    """
    batch, heads, length, keys = q.size(0), q.size(1), q.size(2), k.size(2)
    device = q.device
    b = torch.arange(batch, device=device).view(-1, 1, 1, 1)
    h = torch.arange(heads, device=device).view(1, -1, 1, 1)
    q_idx = torch.arange(length, device=device).view(1, 1, -1, 1)
    kv_idx = torch.arange(keys, device=device).view(1, 1, 1, -1)
    scores = score_mod(torch.matmul(q.float(), k.float().transpose(2, 3)), b, h, q_idx, kv_idx)
    allowed = mask_mod(b, h, q_idx, kv_idx).expand(scores.shape)
    has_key = allowed.any(-1, keepdim=True)
    # Rows without a key get finite scores, so that no 0 * inf reaches the gradients.
    scores = torch.where(has_key, torch.where(allowed, scores, float("-inf")), 0.0)
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    probs = torch.exp(scores - lse) * has_key
    out = torch.matmul(probs, v.float()).to(v.dtype)
    lse = torch.where(has_key, lse, float("-inf")).squeeze(-1)
    return out, lse if need_lse else None


def band_dot(q: Tensor, k: Tensor, clip: int, block: int = 64) -> Tensor:
    """(B, H, T, 2k+1): q_i . k_{i+o} for o in [-k, k], 0 where i + o is outside the sequence.

    Blocks of `block` queries against their block + 2k keys: one batched matmul, O(T (block + 2k))
    scores, 5x faster on CPU than one multiply-and-sum per offset at T = 2048.
    """
    batch, heads, length, head_dim = q.shape
    blocks = -(-length // block)
    extra = blocks * block - length
    width = block + 2 * clip
    queries = F.pad(q, (0, 0, 0, extra)).view(batch, heads, blocks, block, head_dim)
    # Key i + o sits at row i + o + k of the padded keys; block b sees rows [b block, + width).
    windows = F.pad(k, (0, 0, clip, clip + extra)).unfold(2, width, block)
    scores = torch.matmul(queries, windows)  # (B, H, blocks, block, width)
    offsets = torch.arange(block, device=q.device).unsqueeze(1)
    offsets = offsets + torch.arange(2 * clip + 1, device=q.device)
    band = scores.gather(-1, offsets.expand(batch, heads, blocks, -1, -1))
    return band.reshape(batch, heads, blocks * block, 2 * clip + 1)[:, :, :length]


def band_logits(
    q: Tensor, k: Tensor, per_bucket: Tensor, clip: int, key_padding_mask: Tensor
) -> Tensor:
    """(B, H, T, 2k+1) fp32 logits of key i + o for o in [-k, k]: q_i . k_{i+o} + q_i . a^K[o+k],
    -inf where i + o is outside the sequence or padding."""
    length = q.size(2)
    qk = band_dot(q.float(), k.float(), clip)
    positions = torch.arange(length, device=q.device).unsqueeze(1)
    key_positions = positions + torch.arange(-clip, clip + 1, device=q.device)
    outside = (key_positions < 0) | (key_positions >= length)
    padding = F.pad(key_padding_mask, (clip, clip), value=True)[:, key_positions + clip]
    invalid = (outside | padding).unsqueeze(1)
    return torch.where(invalid, float("-inf"), qk + per_bucket)


def band_softmax(logits: Tensor) -> Tensor:
    """Softmax over the band, 0 on rows whose band has no key (padding queries deep in padding)."""
    # The shift cancels in the softmax and in its gradient, so it may be detached and clamped.
    shift = logits.amax(-1, keepdim=True).detach().clamp(min=torch.finfo(logits.dtype).min)
    weights = torch.exp(logits - shift)
    total = weights.sum(-1, keepdim=True)
    return weights / torch.where(total > 0, total, torch.ones_like(total))


def shaw_attention_flex(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    rel_keys: Tensor,
    rel_values: Tensor,
    clip: int,
    key_padding_mask: Tensor,
    attend: Attend,
    masses: str = "lse",
) -> Tensor:
    """Shaw attention with the T x T part in `attend` (flex_attention) and the value term
    sum_j alpha_ij a^V[b_ij] from the band probabilities and the two edge masses."""
    batch, heads, length, head_dim = q.shape
    per_bucket = torch.matmul(q.float(), rel_keys.float().transpose(0, 1))  # (B, H, T, 2k+1)
    band = band_logits(q, k, per_bucket, clip, key_padding_mask)

    if masses == "lse":

        def score_mod(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            return score + per_bucket[b, h, q_idx, (kv_idx - q_idx).clamp(-clip, clip) + clip]

        def keys_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            return ~key_padding_mask[b, kv_idx]

        def left_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            return ~key_padding_mask[b, kv_idx] & (kv_idx < q_idx - clip)

        out, lse = attend(q, k, v, score_mod, keys_mask, True)
        # Only the lse of the second call is used: detached values spare a dv there.
        _, lse_left = attend(q, k, v.detach(), score_mod, left_mask, True)
        band_probs = torch.exp(band - lse.unsqueeze(-1))
        left = torch.exp(lse_left - lse)
        right = 1.0 - band_probs.sum(-1) - left
    elif masses == "split":

        def score_mod(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            key = kv_idx % length
            return score + per_bucket[b, h, q_idx, (key - q_idx).clamp(-clip, clip) + clip]

        def region_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            copy = kv_idx // length
            offset = kv_idx - copy * length - q_idx
            region = (offset >= -clip).to(torch.int64) + (offset > clip).to(torch.int64)
            return ~key_padding_mask[b, kv_idx - copy * length] & (region == copy)

        one_hot = torch.eye(3, dtype=v.dtype, device=v.device).repeat_interleave(length, dim=0)
        values = torch.cat([v.repeat(1, 1, 3, 1), one_hot.expand(batch, heads, -1, -1)], dim=-1)
        out_and_masses, _ = attend(q, k.repeat(1, 1, 3, 1), values, score_mod, region_mask, False)
        out = out_and_masses[..., :head_dim]
        left, band_mass, right = out_and_masses[..., head_dim:].float().unbind(-1)
        band_probs = band_mass.unsqueeze(-1) * band_softmax(band)
    else:
        raise ValueError(f"masses must be one of {MASS_MODES}, got {masses!r}")

    # Band offset o is bucket o + k; the edges add to buckets 0 and 2k.
    edges = F.pad(left.unsqueeze(-1), (0, 2 * clip)) + F.pad(right.unsqueeze(-1), (2 * clip, 0))
    value_term = torch.matmul(band_probs + edges, rel_values.float())
    return (out.float() + value_term).to(q.dtype)


def make_inputs(
    batch: int,
    heads: int,
    length: int,
    head_dim: int,
    clip: int,
    device: torch.device,
    dtype: torch.dtype,
    seed: int,
) -> Tuple[List[Tensor], Tensor]:
    """[q, k, v, a^K, a^V] (leaves requiring grad) and a right-padding mask: the first sequence
    full, the others 1/8 shorter each (at least one key left)."""
    generator = torch.Generator().manual_seed(seed)

    def normal(*shape: int, scale: float = 1.0) -> Tensor:
        return torch.randn(*shape, generator=generator).mul(scale)

    # q scaled as role_attention scales it; the tables at Xavier-uniform's scale.
    table_scale = (6.0 / (2 * clip + 1 + head_dim)) ** 0.5 / 3**0.5
    tensors = [
        normal(batch, heads, length, head_dim, scale=head_dim**-0.5),
        normal(batch, heads, length, head_dim),
        normal(batch, heads, length, head_dim),
        normal(2 * clip + 1, head_dim, scale=table_scale),
        normal(2 * clip + 1, head_dim, scale=table_scale),
    ]
    tensors = [t.to(device=device, dtype=dtype).requires_grad_() for t in tensors]
    lengths = [max(1, length - (length * b) // 8) for b in range(batch)]
    padding = torch.arange(length).unsqueeze(0) >= torch.tensor(lengths).unsqueeze(1)
    return tensors, padding.to(device)


def forward_backward(
    attention: ShawAttention, tensors: List[Tensor], clip: int, padding: Tensor, grad_out: Tensor
) -> Tuple[Tensor, List[Tensor]]:
    """Output and the gradients of (out * grad_out).sum() with respect to the five tensors."""
    for tensor in tensors:
        tensor.grad = None
    out = attention(*tensors, clip, padding)
    (out * grad_out).sum().backward()
    return out.detach(), [tensor.grad for tensor in tensors]


def max_abs_diff(a: Tensor, b: Tensor) -> float:
    return (a.double() - b.double()).abs().max().item()


def short_error(error: BaseException) -> str:
    """The exception's type and the line naming the cause (inductor wraps it in long dumps)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()] or [""]
    causes = [line for line in lines if "Error: " in line or "Exception: " in line]
    return f"{type(error).__name__}: {(causes or lines)[0]}"[:400]


def flex_variants(masses: Sequence[str]) -> Dict[str, ShawAttention]:
    attend = flex_attend()

    def variant(mode: str) -> ShawAttention:
        def attention(*args: object) -> Tensor:
            return shaw_attention_flex(*args, attend=attend, masses=mode)  # type: ignore[misc]

        return attention

    return {f"flex_{mode}": variant(mode) for mode in masses}


def benchmark_length(args: argparse.Namespace, length: int, device: torch.device) -> Dict:
    # Fresh compile caches per length, so that dynamo's recompile limit (8 per code object) is
    # never reached; past it, flex_attention would quietly run its unfused eager version.
    torch._dynamo.reset()
    dtype = DTYPES[args.dtype]
    tensors, padding = make_inputs(
        args.batch, args.heads, length, args.head_dim, args.clip, device, dtype, args.seed
    )
    detached = [t.detach() for t in tensors]
    grad_out = torch.randn(tensors[0].shape, generator=torch.Generator().manual_seed(args.seed + 1))
    grad_out = grad_out.to(device=device, dtype=dtype)
    clip = args.clip

    with torch.no_grad():
        reference_fp64 = shaw_attention_gather_scatter(
            *[t.double() for t in detached], clip, padding
        )
    reference_out, reference_grads = forward_backward(
        shaw_attention_gather_scatter, tensors, clip, padding, grad_out
    )
    sides: Dict[str, ShawAttention] = {"gather_scatter": shaw_attention_gather_scatter}
    sides.update(flex_variants(args.masses))
    variants: Dict[str, Dict] = {}
    forward_steps: Dict[str, Callable[[], None]] = {}
    train_steps: Dict[str, Callable[[], None]] = {}
    for name, attention in sides.items():
        report: Dict = {}

        def forward(attention: ShawAttention = attention) -> Tensor:
            with torch.no_grad():
                return attention(*detached, clip, padding)

        try:
            start = time.perf_counter()
            out = forward()
            synchronize(device)
            report["first_call_s"] = round(time.perf_counter() - start, 2)
        except Exception as error:  # noqa: BLE001 (reported in the JSON, the others still run)
            # A call that fails inside a compiled flex_attention (here: no lse in the CPU
            # kernel) leaves it running eagerly from then on; a reset compiles it again.
            torch._dynamo.reset()
            report["error"] = short_error(error)
            variants[name] = report
            logger.info("%s T=%d forward: %s", name, length, report["error"])
            continue
        forward_steps[name] = forward
        report["max_abs_diff_out"] = max_abs_diff(out, reference_out)
        report["max_abs_err_vs_fp64"] = max_abs_diff(out, reference_fp64)
        try:
            out, grads = forward_backward(attention, tensors, clip, padding, grad_out)
            report["max_abs_diff_grad"] = max(
                max_abs_diff(g, r) for g, r in zip(grads, reference_grads)
            )
            train_steps[name] = lambda attention=attention: forward_backward(
                attention, tensors, clip, padding, grad_out
            )
        except Exception as error:  # noqa: BLE001
            torch._dynamo.reset()  # as above (here: no backward on CPU)
            report["backward_error"] = short_error(error)
            report["max_abs_diff_grad"] = None
        diffs = [report["max_abs_diff_out"], report["max_abs_diff_grad"]]
        report["within_tolerance"] = all(d is None or d <= TOLERANCE[args.dtype] for d in diffs)
        variants[name] = report

    for mode, steps in (("fwd_ms", forward_steps), ("ms", train_steps)):
        for step in steps.values():
            timed(step, args.warmup_steps, device)
        seconds: Dict[str, List[float]] = {name: [] for name in steps}
        for _ in range(args.repeats):
            for name, step in steps.items():  # in turns: load from elsewhere hits every side
                seconds[name].append(timed(step, args.steps, device)[0] / args.steps)
        for name, values in seconds.items():
            variants[name][mode] = round(1000 * statistics.median(values), 3)
            logger.info("T=%d %s %s: %s", length, name, mode, variants[name][mode])

    for name, step in forward_steps.items():
        variants[name]["peak_mem_fwd_mib"] = round(peak_memory_bytes(step, device) / MIB, 1)
    for name, step in train_steps.items():
        for tensor in tensors:  # freed before the window: the profiler misses older blocks' frees
            tensor.grad = None
        variants[name]["peak_mem_mib"] = round(peak_memory_bytes(step, device) / MIB, 1)
    return summary(args, length, device, variants, reference_fp64.abs().max().item())


def summary(
    args: argparse.Namespace, length: int, device: torch.device, variants: Dict, out_scale: float
) -> Dict:
    """One JSON line: the flex figures are those of the fastest flex variant that ran."""
    gather = variants.pop("gather_scatter")
    ran = [name for name, report in variants.items() if "fwd_ms" in report]
    # Forward + backward decides where it ran, else the forward alone.
    best = min(
        ran,
        key=lambda name: (variants[name].get("ms", float("inf")), variants[name]["fwd_ms"]),
        default=None,
    )
    flex = variants[best] if best else {}

    def ratio(key: str) -> Optional[float]:
        if key not in flex or key not in gather:
            return None
        return round(flex[key] / gather[key], 4)

    return {
        "benchmark": "relative_attention_kernels",
        "device": str(device),
        "dtype": args.dtype,
        "T": length,
        "batch": args.batch,
        "heads": args.heads,
        "head_dim": args.head_dim,
        "clip": args.clip,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "gather_scatter_ms": gather.get("ms"),
        "flex_ms": flex.get("ms"),
        "ratio_flex_over_gather": ratio("ms"),
        "gather_scatter_fwd_ms": gather.get("fwd_ms"),
        "flex_fwd_ms": flex.get("fwd_ms"),
        "ratio_flex_over_gather_fwd": ratio("fwd_ms"),
        "flex_variant": best,
        "max_abs_diff_out": flex.get("max_abs_diff_out"),
        "max_abs_diff_grad": flex.get("max_abs_diff_grad"),
        "tolerance": TOLERANCE[args.dtype],
        "within_tolerance": flex.get("within_tolerance"),
        "max_abs_out_fp64": out_scale,
        "max_abs_err_vs_fp64": {
            "gather_scatter": gather.get("max_abs_err_vs_fp64"),
            "flex": flex.get("max_abs_err_vs_fp64"),
        },
        "flex_first_call_s": flex.get("first_call_s"),
        "peak_mem_method": (
            "torch.cuda.max_memory_allocated above the memory allocated before the step"
            if device.type == "cuda"
            else "torch.profiler profile_memory: peak running sum of CPU allocator events"
        ),
        "peak_mem_mib_gather_scatter": gather.get("peak_mem_mib"),
        "peak_mem_mib_flex": flex.get("peak_mem_mib"),
        "peak_mem_fwd_mib_gather_scatter": gather.get("peak_mem_fwd_mib"),
        "peak_mem_fwd_mib_flex": flex.get("peak_mem_fwd_mib"),
        "flex_backward_error": flex.get("backward_error"),
        "variants": variants,
    }


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 2048])
    parser.add_argument("--batch", type=int, default=2, help="sequences (all but one padded)")
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--clip", type=int, default=16, help="Shaw clipping distance k")
    parser.add_argument(
        "--masses", nargs="+", choices=MASS_MODES, default=list(MASS_MODES), help="flex variants"
    )
    parser.add_argument("--seed", type=int, default=1)
    add_repetition_arguments(parser, warmup_steps=2, steps=1, repeats=5)
    return parser.parse_args(argv)


def main(argv: List[str]) -> int:
    # A flex_attention that runs eagerly (scores materialised) would make the figures wrong.
    warnings.filterwarnings("error", message="flex_attention called without torch.compile")
    args = parse_args(argv)
    # force: importing fairseq (via bench_whole_word_attention) already set the root to DEBUG.
    device = set_up(args, force_logging=True)
    for length in args.lengths:
        print(json.dumps(benchmark_length(args, length, device)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
