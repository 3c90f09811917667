"""The translation grid's peak learning rates: --lr for every system, --arch-lr for one
architecture, the profile's default (no --lr at all) otherwise; a bad --arch-lr is refused."""

import pytest

from fairseq_struct.grid.translation import build_parser, grid_from_args, grid_steps

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


def test_without_lr_options_the_profile_default_is_left_to_the_script():
    defaults = train_commands()
    assert all(peak_lr(command) is None for command in defaults.values())
    # --arch-lr alone changes only its architecture's commands, so the other runs of a grid
    # started without it stay finished.
    only_tp = train_commands("--arch-lr", "tp_transformer=0.006")
    for system, command in only_tp.items():
        if "tp_transformer" in system:
            assert peak_lr(command) == "0.006"
        else:
            assert command == defaults[system]


@pytest.mark.parametrize("value", ["tp_transformer", "tp=0.006", "tp_transformer=0", "x=y"])
def test_a_bad_arch_lr_is_refused(value, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([*ARGUMENTS, "--arch-lr", value])
    assert f"{value!r} is not ARCH=LR" in capsys.readouterr().err
