"""Bad input to the importer: one error naming the file and the problem, exit 1, and nothing
written (OUT_DIR appears whole or not at all); no network when a directory is given."""

import json
import shutil
import socket
from pathlib import Path

import pytest
import torch

from fairseq_struct.hf_import.cli import main


def _copy(tiny_hf_models: Path, name: str, tmp_path: Path) -> Path:
    source = tmp_path / "source"
    shutil.copytree(tiny_hf_models / "hf" / name, source)
    return source


def _fails(source, tmp_path: Path, capsys, *expected: str) -> str:
    out = tmp_path / "out"
    assert main([str(source), str(out)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ") and error.count("\n") == 1, error
    for part in expected:
        assert part in error, error
    assert not out.exists()
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".out")] == []
    return error


def _edit_config(source: Path, **changes) -> None:
    config = json.loads((source / "config.json").read_text())
    config.update(changes)
    (source / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("model_type, name", [("gpt2", "GPT2LMHeadModel"), ("t5", "T5Model")])
def test_an_unsupported_architecture_names_what_is_supported(
    tiny_hf_models, tmp_path, capsys, model_type, name
):
    source = _copy(tiny_hf_models, "bert-masked-lm", tmp_path)
    _edit_config(source, model_type=model_type, architectures=[name])
    _fails(source, tmp_path, capsys, str(source / "config.json"), model_type, name, "BERT2D")


def _edit_weights(source: Path, edit) -> None:
    from safetensors.torch import load_file, save_file

    weights = load_file(str(source / "model.safetensors"))
    edit(weights)
    save_file(weights, str(source / "model.safetensors"), metadata={"format": "pt"})


def test_a_missing_weight_is_named(tiny_hf_models, tmp_path, capsys):
    source = _copy(tiny_hf_models, "bert-masked-lm", tmp_path)
    _edit_weights(source, lambda w: w.pop("bert.encoder.layer.1.output.dense.weight"))
    _fails(source, tmp_path, capsys, "'bert.encoder.layer.1.output.dense.weight' is missing")


def test_an_unexpected_weight_is_named(tiny_hf_models, tmp_path, capsys):
    source = _copy(tiny_hf_models, "bert-masked-lm", tmp_path)
    _edit_weights(source, lambda w: w.update({"bert.adapter.weight": torch.zeros(2, 2)}))
    _fails(source, tmp_path, capsys, "does not know where to put: bert.adapter.weight")


def test_a_vocabulary_of_another_size_than_the_embeddings(tiny_hf_models, tmp_path, capsys):
    source = _copy(tiny_hf_models, "bert-masked-lm", tmp_path)
    _edit_weights(
        source,
        lambda w: w.update(
            {
                "bert.embeddings.word_embeddings.weight": w[
                    "bert.embeddings.word_embeddings.weight"
                ][:-5].clone()
            }
        ),
    )
    _fails(source, tmp_path, capsys, "the tokenizer has 700 tokens", "695 rows")


def test_a_missing_tokenizer_file(tiny_hf_models, tmp_path, capsys):
    source = _copy(tiny_hf_models, "bert-masked-lm", tmp_path)
    for name in ("tokenizer.json", "vocab.txt"):
        (source / name).unlink(missing_ok=True)
    _fails(source, tmp_path, capsys, str(source), "no tokenizer file")


def test_a_truncated_safetensors_file(tiny_hf_models, tmp_path, capsys):
    source = _copy(tiny_hf_models, "bert-masked-lm", tmp_path)
    data = (source / "model.safetensors").read_bytes()
    (source / "model.safetensors").write_bytes(data[: len(data) // 2])
    _fails(source, tmp_path, capsys, str(source / "model.safetensors"), "truncated")


def _as_bin(source: Path) -> dict:
    from safetensors.torch import load_file

    weights = load_file(str(source / "model.safetensors"))
    (source / "model.safetensors").unlink()
    return weights


def test_a_truncated_bin_file(tiny_hf_models, tmp_path, capsys):
    source = _copy(tiny_hf_models, "bert-masked-lm", tmp_path)
    torch.save(_as_bin(source), source / "pytorch_model.bin")
    data = (source / "pytorch_model.bin").read_bytes()
    (source / "pytorch_model.bin").write_bytes(data[: len(data) // 2])
    _fails(source, tmp_path, capsys, str(source / "pytorch_model.bin"), "truncated")


class _Payload:
    """What a malicious .bin could hold: an object that pickling would build (and run)."""

    def __reduce__(self):
        return (print, ("this must never run",))


def test_a_bin_file_loads_only_tensors(tiny_hf_models, tmp_path, capsys):
    source = _copy(tiny_hf_models, "bert-masked-lm", tmp_path)
    weights = _as_bin(source)
    weights["payload"] = _Payload()
    torch.save(weights, source / "pytorch_model.bin")
    error = _fails(source, tmp_path, capsys, str(source / "pytorch_model.bin"))
    assert "this must never run" not in capsys.readouterr().out
    assert "weights_only" in error or "Unsupported global" in error


def test_a_bin_file_imports(tiny_hf_models, tmp_path):
    source = _copy(tiny_hf_models, "bert-masked-lm", tmp_path)
    torch.save(_as_bin(source), source / "pytorch_model.bin")
    assert main([str(source), str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "model.pt").exists()


def test_a_directory_is_imported_without_any_network_call(tiny_hf_models, tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the importer opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    source = tiny_hf_models / "hf" / "bert-pretraining"
    assert main([str(source), str(tmp_path / "out")]) == 0


def test_a_hub_id_offline_says_to_pass_a_local_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # an empty cache
    _fails("dbmdz/bert-base-turkish-cased", tmp_path, capsys, "--local-dir DIR", "pass DIR")


def test_an_existing_output_directory_is_left_alone(tiny_hf_models, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("kept")
    assert main([str(tiny_hf_models / "hf" / "bert-model"), str(out)]) == 1
    assert "not empty" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_a_bert2d_config_whose_m_differs_from_its_subword_table(tiny_hf_models, tmp_path, capsys):
    source = _copy(tiny_hf_models, "bert2d-m3", tmp_path)
    _edit_config(source, max_intermediate_subword_position_embeddings=5)
    _fails(source, tmp_path, capsys, "M = 5", "has 5 rows (M + 2 expected)")


def test_an_untrained_roberta_pooler_is_left_out_and_said(tiny_hf_models, tmp_path):
    source = _copy(tiny_hf_models, "xlmr", tmp_path)
    _edit_weights(
        source,
        lambda w: w.update(
            {
                "roberta.pooler.dense.weight": torch.zeros(32, 32),
                "roberta.pooler.dense.bias": torch.zeros(32),
            }
        ),
    )
    assert main([str(source), str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "hf_import.json").read_text())
    assert report["notes"] == ["left out: the pooler (RoBERTa's classifier does not use one)"]
    assert "sentence_head_from_pooler" not in report["options"] and not report["pooler"]
