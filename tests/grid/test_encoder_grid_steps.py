"""The encoder grid's steps: preparations before any training, each pretraining's units
prepared once, one pretraining budget for every encoder, the ablations' own options, and a
fine-tuning + prediction per encoder, task, initialisation and seed."""

import pytest

from fairseq_struct.grid.encoder_runs import (
    EncoderGrid,
    check_task_files,
    grid_steps,
    runnable_steps,
)
from fairseq_struct.grid.encoders import build_parser, grid_from_args
from fairseq_struct.grid.steps import GridError

REQUIRED_ARGUMENTS = ["--pretrain-train", "t", "--pretrain-valid", "v", "--tasks-dir", "d"]
REQUIRED_ARGUMENTS += ["--out", "o"]


def option(command: list, name: str) -> str:
    """The value fairseq-train takes: that of the option's last occurrence (argparse's rule)."""
    last = len(command) - 1 - command[::-1].index(name)
    return command[last + 1]


@pytest.fixture
def grid(tmp_path) -> EncoderGrid:
    tasks = tmp_path / "tasks"
    for task, names in {
        "pos": ("train.conllu", "valid.conllu", "test.conllu"),
        "sentiment": ("train.pos", "train.neg", "test.pos", "test.neg"),  # no valid split
    }.items():
        (tasks / task).mkdir(parents=True)
        for name in names:
            (tasks / task / name).write_text("x\n")
    return EncoderGrid(
        pretrain_train="t.txt",
        pretrain_valid="v.txt",
        tasks_dir=tasks,
        out=tmp_path / "grid",
        encoders=("roberta", "bert_elmo", "bert2d_no_wwm", "bert2d_wwa"),
        tasks=("pos", "sentiment"),
        seeds=(1, 2),
        max_update=300,
    )


def test_preparations_come_first_and_each_is_made_once(grid):
    steps = grid_steps(grid)
    kinds = [step.name for step in steps]
    assert kinds.index("train") > max(i for i, kind in enumerate(kinds) if kind == "prepare")
    prepared = [step.system for step in steps if step.name == "prepare"]
    assert prepared == [
        "data pretraining pieces", "data pretraining words",
        "data pieces pos", "data pieces sentiment", "data words pos", "data words sentiment",
    ]  # fmt: skip
    sentiment = next(step for step in steps if step.system == "data pieces sentiment").command
    assert option(sentiment, "--valid-fraction") == "0.1"
    assert sentiment[sentiment.index("--train") + 1 : sentiment.index("--train") + 3] == [
        str(grid.tasks_dir / "sentiment" / "train.neg"),
        str(grid.tasks_dir / "sentiment" / "train.pos"),
    ]


def test_every_encoder_is_pretrained_with_the_same_budget(grid):
    pretraining = {
        step.system.split()[-1]: step.command
        for step in grid_steps(grid)
        if step.system.startswith("pretraining")
    }
    assert list(pretraining) == list(grid.encoders)
    for name in ("--max-update", "--batch-size", "--lr", "--warmup-updates", "--lr-scheduler"):
        assert len({option(command, name) for command in pretraining.values()}) == 1, name
    assert option(pretraining["roberta"], "--max-update") == "300"
    assert option(pretraining["roberta"], "--mask-strategy") == "whole_word"
    # An ablation's option comes after the shared ones, so it is the one that counts.
    assert option(pretraining["bert2d_no_wwm"], "--mask-strategy") == "random"
    assert "--whole-word-attention" in pretraining["bert2d_wwa"]
    assert "--tokens-are-words" in pretraining["bert_elmo"]
    assert pretraining["bert_elmo"][1].endswith("pretrain-words")


def test_a_fine_tuning_and_a_prediction_per_encoder_task_init_and_seed(grid):
    runs = [step for step in grid_steps(grid) if step.name in ("train", "predict")]
    finetunings = [step for step in runs if not step.system.startswith("pretraining")]
    assert len(finetunings) == 4 * 2 * 2 * 2 * 2  # encoders, tasks, inits, seeds, two steps
    scratch = next(s for s in finetunings if s.system == "bert2d_wwa pos scratch, seed 2")
    assert "--scratch" in scratch.command and option(scratch.command, "--seed") == "2"
    assert option(scratch.command, "--pretrained").endswith(
        "pretrain/bert2d_wwa/checkpoints/checkpoint_best.pt"
    )


def test_missing_task_files_are_named(grid):
    (grid.tasks_dir / "pos" / "test.conllu").unlink()
    with pytest.raises(GridError, match=r"tasks/pos: no test file \(test\.conllu\)"):
        check_task_files(grid)


def finetuning_command(grid: EncoderGrid, system: str) -> list:
    return next(s.command for s in grid_steps(grid) if s.system == system and s.name == "train")


def test_finetune_epochs_overrides_only_the_tasks_it_names(grid, tmp_path):
    arguments = ["--pretrain-train", "t.txt", "--pretrain-valid", "v.txt"]
    arguments += ["--tasks-dir", str(grid.tasks_dir), "--out", str(grid.out)]
    arguments += ["--tasks", "pos", "sentiment", "--finetune-epochs", "sentiment=2"]
    overridden = grid_from_args(build_parser().parse_args(arguments))
    sentiment = finetuning_command(overridden, "roberta sentiment pretrained, seed 1")
    assert option(sentiment, "--epochs") == "2" and sentiment.count("--epochs") == 1
    # Another task's command is unchanged, so its finished runs stay valid in a resumed grid.
    assert finetuning_command(overridden, "roberta pos scratch, seed 1") == finetuning_command(
        grid_from_args(build_parser().parse_args(arguments[:-2])), "roberta pos scratch, seed 1"
    )
    # The paper profile has no --epochs of its own (finetune.sh's default): it is added.
    paper = grid_from_args(build_parser().parse_args([*arguments, "--profile", "paper"]))
    assert option(finetuning_command(paper, "roberta sentiment scratch, seed 1"), "--epochs") == "2"


@pytest.mark.parametrize("value", ["qa", "qa=0", "parsing=3", "qa=two"])
def test_finetune_epochs_names_a_task_and_a_positive_count(value, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([*REQUIRED_ARGUMENTS, "--finetune-epochs", value])
    assert f"{value!r} is not TASK=EPOCHS" in capsys.readouterr().err


def test_imported_models_are_systems_fine_tuned_in_their_own_units(grid, tmp_path):
    from dataclasses import replace

    imported = tmp_path / "imported" / "berturk"
    imported.mkdir(parents=True)
    (imported / "hf_import.json").write_text("{}")
    grid = replace(grid, encoders=("bert2d",), imported=(("berturk", str(imported)),))
    steps = runnable_steps(grid)
    assert grid.systems == ("bert2d", "berturk")
    assert [s.system for s in steps if s.name == "train" and "pretraining" in s.system] == [
        "pretraining bert2d"
    ]
    data = next(step for step in steps if step.system == "data imported-berturk pos").command
    assert option(data, "--pretraining-data") == str(imported)
    assert "--max-positions" not in data  # the imported model's own length
    runs = [s for s in steps if s.name == "train" and s.system.startswith("berturk pos")]
    assert [s.system for s in runs] == [
        "berturk pos pretrained, seed 1", "berturk pos scratch, seed 1",
        "berturk pos pretrained, seed 2", "berturk pos scratch, seed 2",
    ]  # fmt: skip
    for run in runs:
        assert option(run.command, "--pretrained") == str(imported / "model.pt")
        assert option(run.command, "--data") == str(grid.out / "data" / "imported-berturk-pos")


def test_only_imported_systems_need_no_pretraining_text(tmp_path):
    imported = tmp_path / "mbert"
    imported.mkdir()
    (imported / "hf_import.json").write_text("{}")
    (tmp_path / "tasks" / "pos").mkdir(parents=True)
    for split in ("train", "test"):
        (tmp_path / "tasks" / "pos" / f"{split}.conllu").write_text("x\n")
    args = build_parser().parse_args(
        ["--tasks-dir", str(tmp_path / "tasks"), "--out", str(tmp_path / "g"), "--tasks", "pos",
         "--encoders", "--imported", f"mbert={imported}"]
    )  # fmt: skip
    grid = grid_from_args(args)
    assert grid.systems == ("mbert",) and grid.encoders == ()
    assert not [step for step in runnable_steps(grid) if "pretraining" in step.system]


@pytest.mark.parametrize(
    "encoders, imported, pretraining, message",
    [
        (("bert2d",), (), False, "give --pretrain-train and --pretrain-valid"),
        ((), (("x", "DIR"),), True, "no hf_import.json there"),
        ((), (("bert2d", "DIR"),), True, "the name of a named encoder"),
        ((), (), True, "no system"),
    ],
)
def test_bad_systems_are_named(grid, tmp_path, encoders, imported, pretraining, message):
    from dataclasses import replace

    imported = tuple((name, str(tmp_path / d)) for name, d in imported)
    grid = replace(
        grid,
        encoders=encoders,
        imported=imported,
        pretrain_train="t.txt" if pretraining else None,
        pretrain_valid="v.txt" if pretraining else None,
    )
    with pytest.raises(GridError, match=message):
        runnable_steps(grid)


# ------------------------------------------------------------------------------ catalogue tasks


def catalogue_grid(tmp_path, *extra: str) -> EncoderGrid:
    arguments = ["--pretrain-train", "t.txt", "--pretrain-valid", "v.txt", "--out"]
    arguments += [str(tmp_path / "g"), "--encoders", "bert2d", "--tasks", *extra]
    return grid_from_args(build_parser().parse_args(arguments))


def test_catalogue_tasks_are_fetched_first_and_prepared_from_their_converted_files(tmp_path):
    grid = catalogue_grid(tmp_path, "small-bert-paper", "tquad", "ler-cg")
    assert grid.tasks == ("germeval2014", "ler-cg", "ler-fg", "arendt", "sturm", "tquad")
    steps = runnable_steps(grid)  # nothing fetched yet: the files are named, not looked for
    fetches = [step for step in steps if step.name == "fetch"]
    assert steps[: len(fetches)] == fetches
    datasets = tmp_path / "g" / "datasets"
    assert fetches[0].command[-4:] == ["fetch", "germeval2014", "--out", str(datasets)]
    assert fetches[0].directory == datasets / "germeval2014"
    prepare = next(s for s in steps if s.system == "data pieces ler-cg").command
    assert prepare[prepare.index("fairseq_struct.downstream.prepare") + 1] == "ner"
    assert option(prepare, "--train") == str(datasets / "ler-cg" / "train.conll")
    assert option(prepare, "--valid") == str(datasets / "ler-cg" / "valid.conll")
    qa = next(s for s in steps if s.system == "data pieces tquad").command
    assert qa[qa.index("fairseq_struct.downstream.prepare") + 1] == "qa"
    assert option(qa, "--valid-fraction") == "0.1"  # TQuAD publishes no validation file
    train = next(s for s in steps if s.system == "bert2d sturm pretrained, seed 1")
    assert option(train.command, "--head") == "lcrf_ner" and "--entity-fix" in train.command
    predict = next(s for s in steps if s.system == "bert2d sturm pretrained, seed 1"
                   and s.name == "predict")  # fmt: skip
    assert option(predict.command, "--input") == str(datasets / "sturm" / "test.conll")
    assert predict.directory == tmp_path / "g" / "runs" / "bert2d-sturm-pretrained-seed1"


def test_sentiment_from_the_catalogue_names_its_class_files_and_datasets_dir(tmp_path):
    grid = catalogue_grid(tmp_path, "turkish-sentiment", "--datasets-dir", str(tmp_path / "d"))
    prepare = next(s for s in grid_steps(grid) if s.system == "data pieces turkish-sentiment")
    files = prepare.command[prepare.command.index("--train") + 1 :]
    assert files[:3] == [str(tmp_path / "d" / "turkish-sentiment" / f"train.{label}")
                         for label in ("negative", "positive")] + ["--out-dir"]  # fmt: skip
    assert option(prepare.command, "--valid") == str(
        tmp_path / "d" / "turkish-sentiment" / "valid.negative"
    )


def test_finetune_epochs_of_a_data_set_and_of_a_kind(tmp_path):
    grid = catalogue_grid(
        tmp_path, "ler-fg", "ler-cg", "ud-turkish-imst", "--finetune-epochs", "ner=3", "ler-fg=5"
    )
    assert option(finetuning_command(grid, "bert2d ler-fg pretrained, seed 1"), "--epochs") == "5"
    assert option(finetuning_command(grid, "bert2d ler-cg pretrained, seed 1"), "--epochs") == "3"
    pos = finetuning_command(grid, "bert2d ud-turkish-imst pretrained, seed 1")
    assert option(pos, "--epochs") == "8"  # the cpu profile's


def test_unknown_task_lists_kinds_data_sets_and_collections(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([*REQUIRED_ARGUMENTS, "--tasks", "germeval"])
    error = capsys.readouterr().err
    assert "unknown task 'germeval': give a kind (ner, pos, sentiment, qa" in error
    assert "germeval2014" in error and "small-bert-paper" in error


def test_a_kind_without_tasks_dir_is_named(tmp_path):
    with pytest.raises(GridError, match=r"task pos: give --tasks-dir with its pos/ folder"):
        runnable_steps(catalogue_grid(tmp_path, "tquad", "pos"))


def test_german_pretraining_text_is_not_segmented_into_morphemes(tmp_path):
    grid = catalogue_grid(tmp_path, "sturm", "--lang", "de", "--encoders", "bert2d", "bert_elmo")
    steps = {step.system: step.command for step in grid_steps(grid)}
    pieces = steps["data pretraining pieces"]
    assert option(pieces, "--mode") == "bpe" and option(pieces, "--lang") == "de"
    assert option(steps["data pretraining words"], "--lang") == "de"  # Moses' German rules
    turkish = {s.system: s.command for s in grid_steps(catalogue_grid(tmp_path, "sturm"))}
    assert option(turkish["data pretraining pieces"], "--mode") == "morph"
