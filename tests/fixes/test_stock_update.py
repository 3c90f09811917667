"""FAIRSEQ_STRUCT_STOCK_UPDATE=1 puts fairseq's own update back under the same command (the
four speed repairs off, the others on), and a training process says which repairs it runs."""

import logging
import os
import subprocess
import sys

from fairseq import utils
from fairseq.optim.adafactor import Adafactor
from fairseq.optim.adam import Adam

from fairseq_struct.fixes import multi_tensor_adafactor, multi_tensor_adam, multi_tensor_grad_norm
from fairseq_struct.fixes.stock_update import (
    CORRECTNESS_REPAIRS,
    SPEED_REPAIRS,
    STOCK_UPDATE_VARIABLE,
    log_active_repairs,
    restore_stock_updates,
)

PROBE = (
    "import fairseq_cli.train, fairseq_struct\n"
    "from fairseq import utils\n"
    "from fairseq.optim.adam import Adam\n"
    "from fairseq.optim.adafactor import Adafactor\n"
    "from fairseq_struct.fixes import multi_tensor_adam, multi_tensor_adafactor, "
    "multi_tensor_grad_norm\n"
    "print(Adam.step is multi_tensor_adam.stock_step,"
    " Adafactor.step is multi_tensor_adafactor.stock_step,"
    " utils.clip_grad_norm_ is multi_tensor_grad_norm.stock_clip_grad_norm_)\n"
)


def test_the_variable_puts_fairseqs_own_update_back_in_a_new_process():
    """A new process, as fairseq-train is (the suite's preloaded servers imported the plugin
    before any test could set the variable)."""
    env = dict(os.environ, **{STOCK_UPDATE_VARIABLE: "1"})
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    lines = result.stdout.splitlines()  # fairseq-train logs to standard output
    assert lines[-1].split() == ["True", "True", "True"]
    (line,) = [line for line in lines if "repairs in force" in line]
    assert "fairseq's own update (FAIRSEQ_STRUCT_STOCK_UPDATE set)" in line
    assert all(name in line for name in CORRECTNESS_REPAIRS)
    assert not any(name in line for name in SPEED_REPAIRS)


def test_by_default_the_grouped_update_runs_and_is_named(caplog, monkeypatch):
    assert Adam.step is not multi_tensor_adam.stock_step
    assert Adafactor.step is not multi_tensor_adafactor.stock_step
    assert utils.clip_grad_norm_ is not multi_tensor_grad_norm.stock_clip_grad_norm_
    monkeypatch.setitem(sys.modules, "fairseq_cli.train", sys.modules.get("fairseq_cli.train"))
    with caplog.at_level(logging.INFO, logger="fairseq_struct.fixes"):
        log_active_repairs()
    (record,) = caplog.records
    assert all(name in record.getMessage() for name in CORRECTNESS_REPAIRS + SPEED_REPAIRS)
    assert "FAIRSEQ_STRUCT_STOCK_UPDATE=1 runs fairseq's own" in record.getMessage()
    restore_stock_updates(monkeypatch.setattr)  # undone by monkeypatch after the test
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fairseq_struct.fixes"):
        log_active_repairs()
    assert not any(name in caplog.records[0].getMessage() for name in SPEED_REPAIRS)


def test_no_line_outside_training(caplog, monkeypatch):
    monkeypatch.delitem(sys.modules, "fairseq_cli.train", raising=False)
    with caplog.at_level(logging.INFO, logger="fairseq_struct.fixes"):
        log_active_repairs()
    assert caplog.records == []
