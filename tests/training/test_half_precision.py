"""bf16 and fp16 training with fairseq's own options, on the CPU.

`fairseq-train --bf16` / `--fp16` / `--memory-efficient-fp16` cast the model to half precision
and keep fp32 master weights in fairseq's FP16Optimizer: every model of the project must train
that way (finite, falling loss) with its softmax and accumulations in fp32. On the CPU the
kernels differ from a GPU's, but the dtypes that flow through the project's code are the same.
The GPU runs are in tests/gpu.
"""

import re
from pathlib import Path

import pytest
import torch
from conftest import SMALL_CHARACTER_CNN, run_tool, tiny_mlm_train_args, tiny_train_args, venv_tool

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.modules.whole_word_attention import WholeWordAttention
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary

HALF_OPTIONS = {
    "bf16": ["--bf16"],
    # fairseq flattens the fp32 master copy on the current CUDA device; on a CPU it cannot.
    "fp16": ["--fp16", "--fp16-no-flatten-grads"],
    "memory_efficient_fp16": ["--memory-efficient-fp16"],
}


def _losses(stdout_and_stderr: str) -> list:
    """The training loss of every update (`--log-interval 1`)."""
    pattern = r"train_inner .* loss=([0-9.]+|nan|inf),"
    return [float(value) for value in re.findall(pattern, stdout_and_stderr)]


def _train(args: list, tmp_path: Path) -> list:
    result = run_tool([venv_tool("fairseq-train"), *args], cwd=tmp_path)
    losses = _losses(result.stdout + result.stderr)
    assert losses, result.stderr[-3000:]
    return losses


@pytest.mark.parametrize(
    "arch,precision",
    [
        ("tp_transformer_tiny", "bf16"),
        ("tp_transformer_tiny", "fp16"),
        ("transformer_relpos_tiny", "bf16"),
    ],
)
def test_translation_models_train_in_half_precision(
    arch, precision, tiny_translation_data, tmp_path
):
    """Learning, not noise: the last 3 losses at least 1 nat a token below the first 3. The
    copy task's 12 updates lower them by 2.8 (tp_transformer bf16: 8.18 -> 5.33), while with
    `--lr 0` the same batches give 8.18 and 8.22 (the last loss alone was below the first at
    update 11 there: 7.49 against 8.12)."""
    args = tiny_train_args(tiny_translation_data, tmp_path / "ckpt", max_update=12)
    args[args.index("tp_transformer_tiny")] = arch
    args[args.index("adafactor")] = "adam"
    losses = _train(args + HALF_OPTIONS[precision], tmp_path)
    assert all(loss == loss and loss < 100 for loss in losses), losses  # finite
    assert len(losses) == 12, losses
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 1.0, losses


@pytest.mark.parametrize(
    "arch,units,extra,precision",
    [
        ("bert2d_tiny", "pieces", [], "bf16"),
        (
            "bert2d_tiny",
            "pieces",
            ["--relative-positions", "4", "--sentence-objective", "sop"],
            "memory_efficient_fp16",
        ),
        ("bert2d_tiny", "pieces", ["--whole-word-attention"], "bf16"),
        # Batches of 4 sentences and an eighth of the character filters: a CPU without bf16
        # instructions emulates bf16 matrix products and convolutions, ~30x slower than fp32
        # (6.5 s an update of 16 sentences here with the paper's filters).
        (
            "bert_elmo_tiny",
            "words",
            ["--tokens-are-words", "--batch-size", "4", *SMALL_CHARACTER_CNN],
            "bf16",
        ),
    ],
)
def test_masked_lm_encoders_train_in_half_precision(
    arch, units, extra, precision, tiny_mlm_data, tmp_path
):
    """The same 12 updates with `--lr 0` (the same batches, masks and dropout; the weights
    left as they are) are the reference: the first loss must equal its, the last ones be lower.
    A single run's losses cannot show learning: they differ from batch to batch more than 12
    small updates lower them (with `--lr 0`, the last of them were below the first one too)."""
    data = tiny_mlm_data[units]
    learnt, frozen = (
        _train(
            tiny_mlm_train_args(data, tmp_path / name, 12, "--arch", arch, *extra, *lr)
            + HALF_OPTIONS[precision],
            tmp_path,
        )
        for name, lr in (("learnt", []), ("frozen", ["--lr", "0"]))
    )
    assert all(loss == loss and loss < 100 for loss in learnt + frozen), (learnt, frozen)
    assert learnt[0] == frozen[0], (learnt, frozen)  # the same model on the same first batch
    assert sum(learnt[-3:]) < sum(frozen[-3:]), (learnt, frozen)


def test_whole_word_attention_in_bf16_follows_fp32():
    """Softmax and word averaging in fp32: bf16 outputs stay within bf16's resolution of fp32's,
    also with long words whose averages sum many tokens."""
    torch.manual_seed(0)
    attention = WholeWordAttention(64, 4, window=3).eval()
    x = torch.randn(300, 2, 64)
    word_index = (torch.arange(300) // 25).expand(2, -1).contiguous()  # 25-token words
    with torch.no_grad():
        expected = attention(x, word_index)
        actual = attention.to(torch.bfloat16)(x.to(torch.bfloat16), word_index)
    assert actual.dtype == torch.bfloat16
    error = (actual.float() - expected).abs().max() / expected.abs().max()
    assert error < 2e-2, error


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "transformer_relpos_tiny"])
def test_relative_attention_in_bf16_follows_fp32(arch):
    """The TP-Transformer's forward in bf16 against fp32 (relative value term summed in fp32)."""
    dictionary = joined_dictionary(40)
    model = build_model_from_arch(arch, dictionary, seed=0).eval()
    src = torch.randint(4, 40, (2, 60))
    prev = torch.randint(4, 40, (2, 50))
    lengths = torch.tensor([60, 60])
    with torch.no_grad():
        expected, _ = model(src, lengths, prev)
        actual, _ = model.to(torch.bfloat16)(src, lengths, prev)
    assert actual.dtype == torch.bfloat16
    error = (actual.float().softmax(-1) - expected.softmax(-1)).abs().max()
    assert error < 2e-2, error
