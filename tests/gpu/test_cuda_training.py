"""The GPU path: bf16 training of every model with fairseq-train, incremental decoding equal to the
full forward, and a checkpoint that round-trips, all on CUDA.

Marked `cuda`: skipped, with the reason in the summary, on a machine without a GPU; on one,
run `pytest -m cuda tests/gpu tests/training/test_host_syncs.py`. The host-synchronisation
checks on CUDA are in tests/training/test_host_syncs.py (their `cuda` variants).
"""

import re
from pathlib import Path

import pytest
import torch
from conftest import requires_cuda, run_tool, tiny_mlm_train_args, tiny_train_args, venv_tool
from fairseq import checkpoint_utils

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.modules.whole_word_attention import WholeWordAttention
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary

pytestmark = requires_cuda


def _on_the_gpu(args: list) -> list:
    """The tests' CPU arguments, minus --cpu, plus bf16."""
    return [arg for arg in args if arg != "--cpu"] + ["--bf16"]


def _train(args: list, tmp_path: Path) -> list:
    result = run_tool([venv_tool("fairseq-train"), *args], cwd=tmp_path)
    output = result.stdout + result.stderr
    losses = [float(v) for v in re.findall(r"train_inner .* loss=([0-9.]+|nan|inf),", output)]
    assert losses, output[-3000:]
    assert all(loss == loss and loss < 100 for loss in losses), losses
    assert min(losses[-3:]) < losses[0], losses
    return losses


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "transformer_relpos_tiny"])
def test_translation_models_train_in_bf16_on_cuda(arch, tiny_translation_data, tmp_path):
    args = tiny_train_args(tiny_translation_data, tmp_path / "ckpt", max_update=12)
    args[args.index("tp_transformer_tiny")] = arch
    _train(_on_the_gpu(args), tmp_path)


@pytest.mark.parametrize(
    "arch,units,extra",
    [
        ("bert2d_tiny", "pieces", ["--sentence-objective", "sop"]),
        ("bert2d_tiny", "pieces", ["--relative-positions", "4"]),
        ("bert2d_tiny", "pieces", ["--whole-word-attention"]),
        ("bert_elmo_tiny", "words", ["--tokens-are-words"]),
    ],
)
def test_masked_lm_encoders_train_in_bf16_on_cuda(arch, units, extra, tiny_mlm_data, tmp_path):
    args = tiny_mlm_train_args(tiny_mlm_data[units], tmp_path / "ckpt", 12, "--arch", arch, *extra)
    _train(_on_the_gpu(args), tmp_path)


@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, 1e-4), (torch.bfloat16, 5e-2)])
@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "transformer_relpos_tiny"])
def test_incremental_decoding_equals_the_full_forward_on_cuda(arch, dtype, tolerance):
    dictionary = joined_dictionary(60)
    model = build_model_from_arch(arch, dictionary, seed=0).eval().cuda().to(dtype)
    generator = torch.Generator().manual_seed(0)
    src = torch.randint(4, 60, (3, 9), generator=generator).cuda()
    prev = torch.randint(4, 60, (3, 7), generator=generator).cuda()
    prev[:, 0] = dictionary.eos()
    lengths = torch.full((3,), 9, device="cuda")
    with torch.no_grad():
        encoder_out = model.encoder(src, src_lengths=lengths)
        full, _ = model.decoder(prev, encoder_out=encoder_out)
        state: dict = {}
        steps = [
            model.decoder(prev[:, : t + 1], encoder_out=encoder_out, incremental_state=state)[0][
                :, -1
            ]
            for t in range(prev.size(1))
        ]
    incremental = torch.stack(steps, dim=1).float()
    error = (incremental - full.float()).abs().max() / full.float().abs().max()
    assert error < tolerance, error


def test_a_checkpoint_trained_on_cuda_loads_on_cuda_and_cpu_alike(tiny_translation_data, tmp_path):
    args = tiny_train_args(tiny_translation_data, tmp_path / "ckpt", max_update=5)
    run_tool([venv_tool("fairseq-train"), *[a for a in args if a != "--cpu"]], cwd=tmp_path)
    checkpoint = str(tmp_path / "ckpt" / "checkpoint_last.pt")
    outputs = []
    for device in ("cuda", "cpu"):
        models, _, _ = checkpoint_utils.load_model_ensemble_and_task([checkpoint])
        model = models[0].eval().to(device)
        src = torch.arange(4, 12, device=device).view(1, -1)
        prev = torch.arange(5, 10, device=device).view(1, -1)
        with torch.no_grad():
            out, _ = model(src, torch.tensor([8], device=device), prev)
        outputs.append(out.float().cpu())
    torch.testing.assert_close(outputs[0], outputs[1], rtol=1e-4, atol=1e-4)


def test_whole_word_attention_on_cuda_equals_the_cpu():
    torch.manual_seed(0)
    attention = WholeWordAttention(64, 4, window=3).eval()
    x = torch.randn(200, 2, 64)
    word_index = (torch.arange(200) // 3).expand(2, -1).contiguous()
    padding = torch.zeros(2, 200, dtype=torch.bool)
    padding[1, 150:] = True
    with torch.no_grad():
        expected = attention(x, word_index, padding)
        actual = attention.cuda()(x.cuda(), word_index.cuda(), padding.cuda()).cpu()
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
