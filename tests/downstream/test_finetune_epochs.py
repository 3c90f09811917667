"""`finetune --epochs N` trains exactly N epochs of the batches fairseq builds: the update budget
(and so the learning-rate schedule) is counted from fairseq's own iterator, not estimated from
the number of sentences. With --batch-size 12 fairseq makes batches of 8 (its
--required-batch-size-multiple), 19 for the 150 German training windows, where 150 / 12 rounds
up to 13: the old estimate stopped the run in its second epoch with the rate not yet at 0."""

import math
import re

from conftest import run_script

EPOCHS = 2


def epoch_updates(log: str) -> dict:
    """epoch -> num_updates at the end of that epoch, from fairseq's train lines."""
    return {
        int(epoch): int(updates)
        for epoch, updates in re.findall(r"\| train \| epoch (\d+) \| .*?\| num_updates (\d+)", log)
    }


def test_the_epochs_asked_for_are_trained_to_their_end(
    german_ner_data, pretrained_german_bert2d, tmp_path
):
    result = run_script(
        "finetune.sh", "--data", str(german_ner_data), "--pretrained",
        str(pretrained_german_bert2d), "--save-dir", str(tmp_path / "ckpt"), "--cpu",
        "--epochs", str(EPOCHS), "--batch-size", "12", cwd=tmp_path,
    )  # fmt: skip
    log = result.stdout + result.stderr
    per_epoch = epoch_updates(log)
    assert sorted(per_epoch) == [1, 2], per_epoch  # the second epoch ended, no third began
    first = per_epoch[1]
    assert first != math.ceil(150 / 12)  # the case the sentence-count estimate got wrong
    assert per_epoch[2] == EPOCHS * first
    assert f"{EPOCHS * first} updates: {EPOCHS} epochs of {first}" in log
    last_train_line = re.findall(r"\| train \| epoch 002 \|.*", log)[-1]
    assert "| lr 0 |" in last_train_line  # the schedule ends with the last update
    command = next(line for line in log.splitlines() if line.startswith("fairseq-train "))
    for option in ("--total-num-update", "--max-update"):
        assert re.search(rf"{option} {EPOCHS * first}\b", command), option
    assert (tmp_path / "ckpt" / "model_best.pt").is_file()
