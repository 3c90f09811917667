"""fairseq's own warnings, which a user cannot act on, are silenced; any other still shows."""

import subprocess
import warnings

import pytest
from conftest import REPO_ROOT, script_environment

from fairseq_struct.fixes.quiet_warnings import FAIRSEQ_WARNINGS, silence_fairseq_warnings

# As fairseq 0.12, Hydra 1.3 and torch 2.13 word them in a CPU fine-tuning run.
PRINTED = [
    (UserWarning, "hydra.experimental.initialize() is no longer experimental. Use hydra.initialize()"),
    (UserWarning, "hydra.experimental.compose() is no longer experimental. Use hydra.compose()"),
    (UserWarning, "\nThe strict flag in the compose API is deprecated.\nSee https://hydra.cc/..."),
    (UserWarning, "\nThe version_base parameter is not specified.\nPlease specify a ..."),
    (UserWarning, "\n'config' is validated against ConfigStore schema with the same name.\n..."),
    (UserWarning, "In 'config': Usage of deprecated keyword in package header '# @package _group_'."),
    (UserWarning, "'pin_memory' argument is set as true but no accelerator is found, then device "
                  "pinned memory won't be used."),
    (FutureWarning, "`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                    "`torch.amp.autocast('cuda', args...)` instead."),
]  # fmt: skip


def shown(category, message) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        silence_fairseq_warnings()
        warnings.warn(message, category)
    return [str(warning.message) for warning in caught]


@pytest.mark.parametrize("category, message", PRINTED)
def test_fairseq_warnings_are_silenced(category, message):
    assert shown(category, message) == []


@pytest.mark.parametrize(
    "category, message",
    [
        (UserWarning, "'pin_memory' is set in your own DataLoader"),
        (UserWarning, "the learning rate is very high"),
        (DeprecationWarning, "hydra.experimental.initialize() is no longer experimental"),
    ],
)
def test_other_warnings_still_show(category, message):
    assert shown(category, message) == [message]


def test_every_filter_is_exercised():
    assert len(FAIRSEQ_WARNINGS) == len(PRINTED) - 1  # initialize and compose share one


def test_a_cpu_fine_tuning_prints_no_warning(german_ner_data, pretrained_german_bert2d, tmp_path):
    # A plain process with Python's own warning filters, as a user's shell starts it (the
    # suite's programs otherwise run with warnings off).
    env = script_environment(stand_ins=False)
    del env["PYTHONWARNINGS"]
    result = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "finetune.sh"), "--data", str(german_ner_data),
         "--pretrained", str(pretrained_german_bert2d), "--save-dir", str(tmp_path / "ckpt"),
         "--cpu", "--epochs", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert "Warning" not in output, [line for line in output.splitlines() if "Warning" in line]
