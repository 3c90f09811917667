"""The translation grid's peak learning rates: --lr for every system, --arch-lr for one
architecture, the profile's rate for the architecture otherwise (the cpu profile's 0.006 for the
TP-Transformer passed, the others left to the script); a bad --arch-lr is refused."""

import pytest

from fairseq_struct.grid.translation import build_parser, grid_from_args
from fairseq_struct.grid.translation_runs import grid_steps

ARGUMENTS = ["--train", "raw/train", "--valid", "raw/valid", "--test", "raw/test"]
ARGUMENTS += ["--tgt-lang", "tr", "--out", "grids/en-tr"]


def train_commands(*options: str) -> dict:
    grid = grid_from_args(build_parser().parse_args([*ARGUMENTS, *options]))
    return {
        step.system: step.command
        for step in grid_steps(grid)
        if step.name == "train" and step.system.endswith("seed 1")
    }


def peak_lr(command: list):
    return command[command.index("--lr") + 1] if "--lr" in command else None


def test_arch_lr_sets_one_architecture_and_lr_the_others():
    commands = train_commands("--lr", "0.003", "--arch-lr", "tp_transformer=0.006")
    rates = {system.split(",")[0]: peak_lr(command) for system, command in commands.items()}
    assert rates == {
        "bpe + transformer_relpos": "0.003", "morph + transformer_relpos": "0.003",
        "bpe + tp_transformer": "0.006", "morph + tp_transformer": "0.006",
    }  # fmt: skip


def test_the_cpu_profile_gives_the_tp_transformer_its_own_rate():
    defaults = train_commands()
    for system, command in defaults.items():
        # The baseline's is left to the script (0.003); the TP-Transformer's is passed.
        assert peak_lr(command) == ("0.006" if "tp_transformer" in system else None), system
    paper = train_commands("--profile", "paper")
    assert all(peak_lr(command) is None for command in paper.values())
    # --lr is every system's rate, the TP-Transformer's too.
    assert {peak_lr(command) for command in train_commands("--lr", "0.002").values()} == {"0.002"}
    # --arch-lr alone changes only its architecture's commands, so the other runs of a grid
    # started without it stay finished.
    only_relpos = train_commands("--arch-lr", "transformer_relpos=0.002")
    for system, command in only_relpos.items():
        if "transformer_relpos" in system:
            assert peak_lr(command) == "0.002"
        else:
            assert command == defaults[system]


@pytest.mark.parametrize("value", ["tp_transformer", "tp=0.006", "tp_transformer=0", "x=y"])
def test_a_bad_arch_lr_is_refused(value, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([*ARGUMENTS, "--arch-lr", value])
    assert f"{value!r} is not ARCH=LR" in capsys.readouterr().err
