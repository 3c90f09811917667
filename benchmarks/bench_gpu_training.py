"""GPU benchmarks: tokens/s, peak memory and MFU, candidate vs stock.

`python3 benchmarks/bench_gpu_training.py --device cuda --dtype bf16` prints one JSON line per
comparison, each with its sides' figures, the ratio, the target, the device's name and the dense
bf16 peak used for MFU. The comparisons, the training step, how peak memory and MFU are measured,
and the figures: benchmarks/README.md#bench_gpu_trainingpy.
"""

import argparse
import inspect
import json
import logging
import statistics
import sys
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from bench_bert2d_training_throughput import (
    Side,
    mask_batch,
    piece_rows,
    run_interleaved,
    turkish_like_text,
)
from bench_tp_generation_speed import check_lengths, source_batch
from bench_tp_training_throughput import synthetic_batch
from bench_whole_word_attention import peak_memory_bytes, training_step, turkish_like_word_index
from fairseq import optim
from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
from fairseq.data import Dictionary
from fairseq.modules import MultiheadAttention
from fairseq.sequence_generator import SequenceGenerator
from interleaved_timing import add_repetition_arguments, set_up
from model_flops import (
    EncoderDims,
    Seq2SeqDims,
    add_peak_argument,
    encoder_training_flops,
    mfu,
    resolve_peak,
    self_attention_layer_flops,
    seq2seq_beam_search_flops,
    seq2seq_training_flops,
)
from torch import Tensor, nn

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.modules.role_attention import (
    RoleAttentionOptions,
    RoleRelativeMultiheadAttention,
)
from fairseq_struct.modules.whole_word_attention import WholeWordAttention
from fairseq_struct.pieces.word_boundaries import word_start_lookup
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary
from fairseq_struct.testing.fairseq_optimizers import build_fairseq_optimizer

logger = logging.getLogger("bench_gpu_training")

TARGETS = {
    "translation_training": 0.85,
    "translation_generation": 0.9,
    "mlm_training": 0.9,
    "whole_word_attention": None,  # memory and time, stated as they come
}
MFU_GOAL_TP = 0.40
COMPARISONS = tuple(TARGETS)
MIB = 2**20
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass(frozen=True)
class Sizes:
    """Model and batch sizes of a run: the base architectures' sizes, or tiny ones (--tiny)."""

    vocab_size: int = 32000
    seq2seq_overrides: Tuple[Tuple[str, int], ...] = ()  # () = the base archs' own sizes
    mlm_overrides: Tuple[Tuple[str, int], ...] = ()
    piece_vocab_size: int = 32000
    word_vocab_size: int = 30000
    wwa_tokens: int = 2048
    wwa_embed_dim: int = 768
    wwa_heads: int = 12


BASE = Sizes()
# One layer of width 64 in every model, two heads of 32 (the TP-Transformer's head width pinned
# so that both translation sides keep d_model = heads x head_dim, as at base size).
TINY = Sizes(
    vocab_size=1000,
    seq2seq_overrides=(
        ("encoder_layers", 1),
        ("decoder_layers", 1),
        ("encoder_embed_dim", 64),
        ("encoder_ffn_embed_dim", 128),
        ("encoder_attention_heads", 2),
        ("decoder_attention_heads", 2),
    ),
    mlm_overrides=(
        ("encoder_layers", 1),
        ("encoder_embed_dim", 64),
        ("encoder_ffn_embed_dim", 128),
        ("encoder_attention_heads", 2),
    ),
    piece_vocab_size=1000,
    word_vocab_size=500,
    wwa_tokens=256,
    wwa_embed_dim=64,
    wwa_heads=2,
)
# What --tiny sets unless given on the command line (None = the option's own default).
TINY_DEFAULTS = {
    "batch_size": 4,
    "sentence_len": 8,
    "max_tokens": [64],
    "gen_batch_size": 2,
    "gen_src_len": 8,
    "gen_steps": 4,
    "mlm_batch_size": 2,
    "mlm_seq_len": 32,
    "wwa_batch_size": 1,
    "warmup_steps": 1,
    "steps": 1,
    "repeats": 2,
}


@dataclass
class Precision:
    """How a side trains: weights' dtype, autocast, and the optimizer wrapper."""

    dtype: torch.dtype
    mode: str  # "fairseq" (bf16 weights + FP16Optimizer) or "autocast"
    device: torch.device

    @property
    def half(self) -> bool:
        return self.dtype != torch.float32

    @property
    def weights_dtype(self) -> torch.dtype:
        return self.dtype if self.half and self.mode == "fairseq" else torch.float32

    def autocast(self) -> Any:
        if self.half and self.mode == "autocast":
            return torch.autocast(self.device.type, dtype=self.dtype)
        return nullcontext()

    def describe(self) -> str:
        if not self.half:
            return "fp32 weights, fairseq's optimizer directly"
        if self.mode == "fairseq" and self.dtype == torch.float16:
            return (
                "float16 weights, fp32 master weights and gradients in fairseq's FP16Optimizer "
                "with dynamic loss scaling (fairseq-train --fp16; an overflowing step is "
                "skipped as fairseq skips it)"
            )
        if self.mode == "fairseq":
            return (
                f"{self.dtype} weights, fp32 master weights and gradients in fairseq's "
                "FP16Optimizer (fairseq-train --bf16), no loss scaling"
            )
        return f"fp32 weights, forward and loss under torch.autocast({self.dtype})"


def fairseq_optimizer(
    params: List[nn.Parameter], precision: Precision, lr: float, betas: str, eps: float, wd: float
) -> optim.FairseqOptimizer:
    """fairseq's `adam`, wrapped as fairseq-train wraps it for --bf16 / --fp16."""
    flags = ["--optimizer", "adam", "--lr", str(lr), "--adam-betas", betas]
    flags += ["--adam-eps", str(eps), "--weight-decay", str(wd)]
    if precision.half and precision.mode == "fairseq":
        flags.append("--fp16" if precision.dtype == torch.float16 else "--bf16")
        if precision.dtype == torch.float16 and precision.device.type != "cuda":
            flags.append("--fp16-no-flatten-grads")  # fairseq flattens on the CUDA device only
    return build_fairseq_optimizer(params, flags)


def describe_optimizer(optimizer: optim.FairseqOptimizer) -> str:
    inner = optimizer.optimizer  # the torch optimizer that does the update
    name = f"{type(inner).__module__}.{type(inner).__name__}"
    return f"{type(optimizer).__name__}({name})"


def fairseq_update(
    optimizer: optim.FairseqOptimizer,
    loss_fn: Callable[[], Tensor],
    sample_size: int,
    precision: Precision,
) -> Callable[[], None]:
    """One update as fairseq's Trainer.train_step makes it (logging and its syncs left out)."""

    def step() -> None:
        optimizer.zero_grad()
        with precision.autocast():
            loss = loss_fn()
        optimizer.backward(loss)
        # sample_size is known on the host before the step, as fairseq's collater gives it.
        optimizer.multiply_grads(1.0 / sample_size)
        try:
            optimizer.clip_grad_norm(0.0)
        except OverflowError:  # --fp16: the scale is lowered, the update skipped
            optimizer.zero_grad()
            return
        optimizer.step()

    return step


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def allocated_bytes(device: torch.device) -> int:
    return torch.cuda.memory_allocated(device) if device.type == "cuda" else 0


@dataclass
class Measured:
    """A Side of the interleaved timing, with what this benchmark adds to it."""

    side: Side
    flops_per_step: int
    extra: Dict[str, Any]
    # Bytes of one step after the warm-up: the peak above what was allocated before the side was
    # built (CUDA only), and the transient peak above what was resident before the step.
    peak_bytes: Optional[int] = None
    transient_bytes: int = 0

    def measure_memory(self, device: torch.device, built_from: int) -> None:
        """One step's peak: on CUDA counted from `built_from`, so that this side's resident
        state (weights, master copies, optimizer state) counts and the other side's does not."""
        resident = allocated_bytes(device) - built_from
        self.transient_bytes = peak_memory_bytes(self.side.step, device)
        if device.type == "cuda":
            self.peak_bytes = resident + self.transient_bytes


def side_figures(
    measured: Measured, unit: str, peak: Optional[float], mfu_goal: Optional[float] = None
) -> Dict[str, Any]:
    side = measured.side
    seconds = statistics.median(side.seconds)
    units = side.units_per_step[unit]
    utilisation = mfu(measured.flops_per_step, seconds, peak)
    figures = {
        "arch": side.arch,
        "params": side.params,
        "seconds_per_step": round(seconds, 6),
        f"{unit}_per_s": round(units / seconds, 2),
        **{
            f"{other}_per_s": round(count / seconds, 2)
            for other, count in side.units_per_step.items()
            if other != unit
        },
        "peak_memory_mib": (
            None if measured.peak_bytes is None else round(measured.peak_bytes / MIB, 1)
        ),
        "step_peak_above_resident_mib": round(measured.transient_bytes / MIB, 1),
        "model_flops_per_step": measured.flops_per_step,
        f"model_flops_per_{unit.rstrip('s')}": round(measured.flops_per_step / units, 1),
        "mfu": None if utilisation is None else round(utilisation, 4),
        **measured.extra,
    }
    if mfu_goal is not None:
        figures["mfu_goal"] = mfu_goal
        figures["meets_mfu_goal"] = None if utilisation is None else utilisation >= mfu_goal
    return figures


def comparison_result(
    benchmark: str,
    a: Measured,
    b: Measured,
    unit: str,
    context: Dict[str, Any],
    settings: Dict[str, Any],
    mfu_goal_a: Optional[float] = None,
) -> Dict[str, Any]:
    figures_a = side_figures(a, unit, context["peak_flops"], mfu_goal_a)
    figures_b = side_figures(b, unit, context["peak_flops"])
    ratio = a.side.rate(unit) / b.side.rate(unit)
    target = TARGETS[benchmark]
    return {
        "benchmark": benchmark,
        **context,
        **settings,
        "a": figures_a,
        "b": figures_b,
        "ratio": round(ratio, 4),
        "ratio_is": f"{unit}/s of a / {unit}/s of b",
        "target": target,
        "meets_target": None if target is None else ratio >= target,
    }


def measure_pair(
    builders: Sequence[Callable[[], Measured]],
    args: argparse.Namespace,
    device: torch.device,
    steps_per_repeat: Optional[int] = None,
) -> List[Measured]:
    """Build, warm up and measure memory side by side, then time in turns (--steps steps per
    repeat unless `steps_per_repeat` is given)."""
    measured = []
    for build in builders:
        built_from = allocated_bytes(device)
        side_measured = build()
        side = side_measured.side
        logger.info("%s: %s, %d parameters", side.label, side.arch, side.params)
        for _ in range(args.warmup_steps):
            side.step()
        side_measured.measure_memory(device, built_from)
        measured.append(side_measured)
    # Warm-up done above, per side, before its memory was measured.
    steps = args.steps if steps_per_repeat is None else steps_per_repeat
    run_interleaved([m.side for m in measured], 0, steps, args.repeats, device)
    return measured


def seq2seq_overrides(arch: str, sizes: Sizes) -> Dict[str, int]:
    overrides = dict(sizes.seq2seq_overrides)
    if overrides and arch.startswith(("tp_transformer", "transformer_relpos")):
        overrides["attention_head_dim"] = (
            overrides["encoder_embed_dim"] // overrides["encoder_attention_heads"]
        )
    return overrides


def translation_training(
    args: argparse.Namespace,
    sizes: Sizes,
    precision: Precision,
    sentences: int,
    shape: str,
    context: Dict[str, Any],
) -> Dict[str, Any]:
    device = precision.device
    dictionary = joined_dictionary(sizes.vocab_size)
    length = args.sentence_len
    batch = synthetic_batch(dictionary, sentences, length, length, args.seed)
    batch = {name: tensor.to(device) for name, tensor in batch.items()}
    target_tokens = sentences * length  # no padding in the synthetic batch

    def builder(label: str, arch: str) -> Callable[[], Measured]:
        def build() -> Measured:
            model = build_model_from_arch(
                arch, dictionary, seed=args.seed, **seq2seq_overrides(arch, sizes)
            )
            model = model.to(device).to(precision.weights_dtype).train()
            optimizer = fairseq_optimizer(
                list(model.parameters()), precision, args.lr, "(0.9, 0.98)", 1e-8, 0.0
            )

            def loss() -> Tensor:
                net_output = model(
                    batch["src_tokens"], batch["src_lengths"], batch["prev_output_tokens"]
                )
                lprobs = model.get_normalized_probs(net_output, log_probs=True)
                summed, _ = label_smoothed_nll_loss(
                    lprobs.view(-1, lprobs.size(-1)),
                    batch["target"].view(-1),
                    args.label_smoothing,
                    ignore_index=dictionary.pad(),
                )
                return summed

            step = fairseq_update(optimizer, loss, target_tokens, precision)
            dims = Seq2SeqDims.from_model(model)
            flops = seq2seq_training_flops(dims, sentences, length, length).total
            units = {"tokens": target_tokens, "sentences": sentences}
            side = Side(label, arch, model, step, units, [], [])
            extra = {"dims": asdict(dims), "optimizer": describe_optimizer(optimizer)}
            return Measured(side, flops, extra)

        return build

    a, b = measure_pair([builder("a", args.arch_tp), builder("b", args.arch_stock)], args, device)
    settings = {
        "shape": shape,
        "batch": {"sentences": sentences, "src_len": length, "tgt_len": length},
        "tokens": "target tokens (fairseq wps); as many source tokens",
        "vocab_size": len(dictionary),
        "precision": precision.describe(),
        "adam": {"lr": args.lr, "betas": "(0.9, 0.98)", "eps": 1e-8, "weight_decay": 0.0},
        "loss": f"label_smoothed_nll_loss (epsilon {args.label_smoothing}), summed",
        **repetition_settings(args),
    }
    return comparison_result(
        "translation_training", a, b, "tokens", context, settings, mfu_goal_a=MFU_GOAL_TP
    )


def translation_generation(
    args: argparse.Namespace, sizes: Sizes, precision: Precision, context: Dict[str, Any]
) -> Dict[str, Any]:
    device = precision.device
    dictionary = joined_dictionary(sizes.vocab_size)
    sample = source_batch(dictionary, args.gen_batch_size, args.gen_src_len, args.seed)
    sample["net_input"] = {name: t.to(device) for name, t in sample["net_input"].items()}
    sentences, steps = args.gen_batch_size, args.gen_steps

    def builder(label: str, arch: str) -> Callable[[], Measured]:
        def build() -> Measured:
            model = build_model_from_arch(
                arch, dictionary, seed=args.seed, **seq2seq_overrides(arch, sizes)
            )
            model = model.to(device).to(precision.dtype).eval()
            generator = SequenceGenerator(
                [model],
                dictionary,
                beam_size=args.beam,
                max_len_a=0,
                max_len_b=steps,
                min_len=steps,
            )

            def translate() -> None:
                check_lengths(generator.forward(sample), steps, arch)

            dims = Seq2SeqDims.from_model(model)
            # steps tokens + EOS per hypothesis: steps + 1 decoder calls.
            flops = seq2seq_beam_search_flops(
                dims, sentences, args.gen_src_len, steps + 1, args.beam
            ).total
            units = {"sentences": sentences, "tokens": sentences * (steps + 1)}
            side = Side(label, arch, model, translate, units, [], [])
            return Measured(side, flops, {"dims": asdict(dims)})

        return build

    # One batch per repeat, as bench_tp_generation_speed.py: steps + 1 decoder calls of
    # sentences x beam hypotheses are long enough to time alone.
    builders = [builder("a", args.arch_tp), builder("b", args.arch_stock)]
    a, b = measure_pair(builders, args, device, steps_per_repeat=1)
    settings = {
        "batch": {"sentences": sentences, "src_len": args.gen_src_len},
        "beam": args.beam,
        "steps": steps,
        "length_control": "max_len_a=0, max_len_b=min_len=steps: every hypothesis is steps "
        "tokens + EOS, steps + 1 decoder calls per batch",
        "tokens": "output tokens of the best hypotheses, EOS included",
        "precision": f"weights cast to {precision.dtype}, eval mode, no autocast",
        "vocab_size": len(dictionary),
        **repetition_settings(args),
        "steps_per_repeat": 1,
    }
    result = comparison_result("translation_generation", a, b, "sentences", context, settings)
    result["ratio_tokens_per_s"] = round(a.side.rate("tokens") / b.side.rate("tokens"), 4)
    return result


def mlm_training(
    args: argparse.Namespace, sizes: Sizes, precision: Precision, context: Dict[str, Any]
) -> Dict[str, Any]:
    device = precision.device
    rows, seq_len = args.mlm_batch_size, args.mlm_seq_len
    text = turkish_like_text(
        sizes.piece_vocab_size, sizes.word_vocab_size, rows, seq_len - 2, args.seed
    )
    dictionary: Dictionary = text.piece_dictionary
    tokens = piece_rows(text)
    word_starts = word_start_lookup(dictionary)[tokens]
    source, target = mask_batch(tokens, dictionary, word_starts, args.seed)
    # Flat indices of the masked tokens, as the masked_lm_struct task's collater gives them:
    # index_select with them needs no host synchronisation (a boolean mask would).
    positions = target.reshape(-1).ne(dictionary.pad()).nonzero().squeeze(1)
    targets = target.reshape(-1)[positions]
    masked = int(positions.numel())
    source, word_starts = source.to(device), word_starts.to(device)
    positions, targets = positions.to(device), targets.to(device)
    input_tokens = rows * seq_len

    def builder(label: str, arch: str) -> Callable[[], Measured]:
        def build() -> Measured:
            overrides = dict(sizes.mlm_overrides)
            net_input: Dict[str, Tensor] = {"src_tokens": source}
            if arch.startswith("bert2d"):
                overrides["max_intermediate_subwords"] = args.max_intermediate_subwords
                net_input["word_starts"] = word_starts
            # Both with 512 positions (bert2d_base's default; fairseq's roberta asks a task).
            overrides["max_positions"] = 512
            model = build_model_from_arch(arch, dictionary, seed=args.seed, **overrides)
            model = model.to(device).to(precision.weights_dtype).train()
            # RoBERTa's recipe: Adam with decoupled weight decay 0.01, betas (0.9, 0.98), 1e-6.
            optimizer = fairseq_optimizer(
                list(model.parameters()), precision, args.lr, "(0.9, 0.98)", 1e-6, 0.01
            )

            def loss() -> Tensor:
                features, _ = model(**net_input, features_only=True)
                selected = features.reshape(-1, features.size(-1)).index_select(0, positions)
                logits = model.encoder.output_layer(selected)
                return F.cross_entropy(logits.float(), targets, reduction="sum")

            step = fairseq_update(optimizer, loss, masked, precision)
            dims = EncoderDims.from_model(model)
            flops = encoder_training_flops(dims, rows, seq_len, masked).total
            side = Side(label, arch, model, step, {"tokens": input_tokens}, [], [])
            extra = {"dims": asdict(dims), "optimizer": describe_optimizer(optimizer)}
            return Measured(side, flops, extra)

        return build

    a, b = measure_pair(
        [builder("a", args.arch_bert2d), builder("b", args.arch_roberta)], args, device
    )
    settings = {
        "batch": {"sentences": rows, "tokens_per_sentence": seq_len},
        "masked_tokens": masked,
        "masking": "whole_word 15%, 80/10/10",
        "lm_head": "on the masked tokens only (masked_lm_struct criterion)",
        "pieces_per_word": round(text.pieces_per_word_in_text, 3),
        "tokens": "input tokens incl. <s> and </s> (fairseq wps)",
        "vocab_size": len(dictionary),
        "precision": precision.describe(),
        "adam": {"lr": args.lr, "betas": "(0.9, 0.98)", "eps": 1e-6, "weight_decay": 0.01},
        **repetition_settings(args),
    }
    return comparison_result("mlm_training", a, b, "tokens", context, settings)


def whole_word_attention_call(
    wwa: WholeWordAttention, word_index: Tensor, num_words: int
) -> Callable[[Tensor], Tensor]:
    # Newer WholeWordAttention takes the word count as a host int (no host sync for m);
    # older versions read it from word_index themselves.
    if "num_words" in inspect.signature(wwa.forward).parameters:
        return lambda t: wwa(t, word_index, None, num_words=num_words)
    return lambda t: wwa(t, word_index, None)


def whole_word_attention(
    args: argparse.Namespace, sizes: Sizes, precision: Precision, context: Dict[str, Any]
) -> Dict[str, Any]:
    """One layer, forward + backward of out.sum() (bench_whole_word_attention.py's step), the
    weights and input in the dtype (no optimizer, so no master copies)."""
    device, dtype = precision.device, precision.dtype
    n, dim, heads = sizes.wwa_tokens, sizes.wwa_embed_dim, sizes.wwa_heads
    batch = args.wwa_batch_size
    word_index = turkish_like_word_index(n, 1.5, args.seed)
    m = int(word_index[0].max()) + 1
    word_index = word_index.expand(batch, n).contiguous().to(device)
    torch.manual_seed(args.seed)
    x = torch.randn(n, batch, dim, device=device, dtype=dtype, requires_grad=True)
    window, k = 5, 16

    wwa = WholeWordAttention(dim, heads, window, k)
    mha = MultiheadAttention(dim, heads, self_attention=True)
    relpos_options = RoleAttentionOptions(
        head_dim=dim // heads, use_roles=False, max_relative_positions=k
    )
    relpos = RoleRelativeMultiheadAttention(dim, heads, relpos_options, self_attention=True)
    layer_dims = {
        "wwa": EncoderDims(1, dim, 0, heads, 0, whole_word_attention=True, wwa_window=window),
        "mha": EncoderDims(1, dim, 0, heads, 0),
        "relpos": EncoderDims(1, dim, 0, heads, 0, relative_positions=k),
    }
    forwards: Dict[str, Callable[[Tensor], Tensor]] = {
        "wwa": whole_word_attention_call(wwa, word_index, m),
        # need_weights=False as in fairseq's TransformerEncoderLayer: the fused SDPA path.
        "mha": lambda t: mha(t, t, t, need_weights=False)[0],
        "relpos": lambda t: relpos(t, t, t, need_weights=False)[0],
    }
    measured: Dict[str, Measured] = {}
    for name, layer in (("wwa", wwa), ("mha", mha), ("relpos", relpos)):
        layer.to(device=device, dtype=dtype).train()
        step = training_step(layer, forwards[name], x)
        flops = 3 * batch * self_attention_layer_flops(layer_dims[name], n, m).total
        params = sum(p.numel() for p in layer.parameters())
        side = Side(name, type(layer).__name__, layer, step, {"tokens": batch * n}, [], [])
        for _ in range(args.warmup_steps):
            step()
        # Gradients freed first so that every allocation of the step counts, as in the bench.
        layer.zero_grad(set_to_none=True)
        x.grad = None
        measured[name] = Measured(side, flops, {"layer_params": params})
        measured[name].measure_memory(device, allocated_bytes(device))
        logger.info("%s: %d parameters", name, params)
    sides = [layer_measured.side for layer_measured in measured.values()]
    run_interleaved(sides, 0, args.steps, args.repeats, device)

    peak = context["peak_flops"]
    figures = {name: side_figures(value, "tokens", peak) for name, value in measured.items()}
    for name in figures:
        figures[name].pop("params")  # the layer's, under layer_params; not a whole model
        figures[name].pop("peak_memory_mib")  # weights are all that is resident: the step's
    seconds = {name: statistics.median(value.side.seconds) for name, value in measured.items()}
    memory = {name: value.transient_bytes for name, value in measured.items()}
    return {
        "benchmark": "whole_word_attention",
        **context,
        "batch_size": batch,
        "tokens_n": n,
        "words_m": m,
        "embed_dim": dim,
        "heads": heads,
        "window": window,
        "max_relative_position": k,
        "step": "forward + backward of out.sum() of one attention layer",
        "precision": f"weights and input in {dtype}",
        "memory": "peak allocated during the step above what was allocated before it",
        "wwa": figures["wwa"],
        "mha": figures["mha"],
        "relpos": figures["relpos"],
        "time_ratio": round(seconds["wwa"] / seconds["mha"], 4),
        "memory_ratio": round(memory["wwa"] / memory["mha"], 4) if memory["mha"] else None,
        "time_ratio_vs_relpos": round(seconds["wwa"] / seconds["relpos"], 4),
        "memory_ratio_vs_relpos": (
            round(memory["wwa"] / memory["relpos"], 4) if memory["relpos"] else None
        ),
        "target": None,
        "target_note": "memory and time stated as they come",
        **repetition_settings(args),
    }


def repetition_settings(args: argparse.Namespace) -> Dict[str, int]:
    return {
        "warmup_steps": args.warmup_steps,
        "steps_per_repeat": args.steps,
        "repeats": args.repeats,
        "seed": args.seed,
    }


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda", help="where all run")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="precision")
    parser.add_argument(
        "--mixed-precision",
        choices=["fairseq", "autocast"],
        default="fairseq",
        help="bf16 training as fairseq-train --bf16 (bf16 weights, fp32 master copies in "
        "FP16Optimizer) or fp32 weights under torch.autocast",
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="1-layer models of width 64 and small batches: a smoke run of every path (CPU)",
    )
    parser.add_argument(
        "--only",
        default=",".join(COMPARISONS),
        help=f"comma-separated subset of {', '.join(COMPARISONS)}",
    )
    add_peak_argument(parser)
    parser.add_argument("--arch-tp", default="tp_transformer_base", help="translation candidate")
    parser.add_argument("--arch-stock", default="transformer", help="fairseq's stock reference")
    parser.add_argument("--arch-bert2d", default="bert2d_base", help="masked-LM candidate")
    parser.add_argument("--arch-roberta", default="roberta_base", help="fairseq's stock reference")
    parser.add_argument("--batch-size", type=int, help="translation sentences per batch (80)")
    parser.add_argument("--sentence-len", type=int, help="source = target tokens (30)")
    parser.add_argument(
        "--max-tokens",
        type=int,
        nargs="*",
        help="further translation batches: sentences x sentence-len <= each, fairseq's "
        "--max-tokens (4096 16384 32768; none given: none)",
    )
    parser.add_argument("--gen-batch-size", type=int, help="source sentences to translate (80)")
    parser.add_argument("--gen-src-len", type=int, help="tokens per source sentence (30)")
    parser.add_argument("--gen-steps", type=int, help="output tokens per hypothesis (30)")
    parser.add_argument("--beam", type=int, default=5, help="beam size of both generators")
    parser.add_argument(
        "--mlm-batch-size",
        type=int,
        help="masked-LM rows per batch (32: 16,384 tokens, well inside an 80 GB GPU in bf16)",
    )
    parser.add_argument("--mlm-seq-len", type=int, help="masked-LM tokens per row (512)")
    parser.add_argument("--max-intermediate-subwords", type=int, default=3, help="BERT2D's M")
    parser.add_argument(
        "--wwa-batch-size", type=int, help="sequences of 2,048 tokens per attention step (8)"
    )
    parser.add_argument("--lr", type=float, default=1e-4, help="Adam's learning rate")
    parser.add_argument("--label-smoothing", type=float, default=0.1, help="translation loss")
    parser.add_argument("--seed", type=int, default=1, help="weights, batches, masks")
    add_repetition_arguments(parser, warmup_steps=None, steps=None, repeats=None)
    args = parser.parse_args(argv)
    full_defaults = {
        "batch_size": 80,
        "sentence_len": 30,
        "max_tokens": [4096, 16384, 32768],
        "gen_batch_size": 80,
        "gen_src_len": 30,
        "gen_steps": 30,
        "mlm_batch_size": 32,
        "mlm_seq_len": 512,
        "wwa_batch_size": 8 if args.device == "cuda" else 1,
        "warmup_steps": 3,
        "steps": 5,
        "repeats": 10,
    }
    defaults = TINY_DEFAULTS if args.tiny else full_defaults
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    unknown = set(args.only.split(",")) - set(COMPARISONS)
    if unknown:
        parser.error(f"--only: unknown comparisons {sorted(unknown)}")
    if args.mlm_seq_len > 512:
        parser.error("--mlm-seq-len: both masked-LM models have 512 positions")
    return args


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    device = set_up(args)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    sizes = TINY if args.tiny else BASE
    precision = Precision(DTYPES[args.dtype], args.mixed_precision, device)
    name = device_name(device)
    peak, peak_source = resolve_peak(name, args.peak_tflops)
    context = {
        "device": str(device),
        "device_name": name,
        "peak_flops": peak,
        "peak_source": peak_source,
        "dtype": args.dtype,
        "tiny": args.tiny,
        "torch": torch.__version__,
    }
    selected = args.only.split(",")

    def emit(result: Dict[str, Any]) -> None:
        print(json.dumps(result), flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()  # the next comparison starts from its own allocations

    if "translation_training" in selected:
        shapes = [(args.batch_size, f"{args.batch_size} x {args.sentence_len} tokens")]
        for max_tokens in args.max_tokens:
            shapes.append((max_tokens // args.sentence_len, f"max_tokens {max_tokens}"))
        for sentences, shape in shapes:
            emit(translation_training(args, sizes, precision, sentences, shape, context))
    if "translation_generation" in selected:
        emit(translation_generation(args, sizes, precision, context))
    if "mlm_training" in selected:
        emit(mlm_training(args, sizes, precision, context))
    if "whole_word_attention" in selected:
        emit(whole_word_attention(args, sizes, precision, context))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
