"""A pretraining checkpoint's weights load into every fine-tuning model of every encoder.

fairseq-train --restore-file calls `model.load_state_dict(state, strict=True)` after the model's
`upgrade_state_dict_named`: the pretraining's NSP/SOP head must go, the new head must be kept,
BERT-ELMo's MLM output must grow with the appended words, and every encoder weight must arrive.
"""

import pytest
import torch
from conftest import USER_DIR
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from fairseq_struct.downstream.prepare import main as prepare


def _build(argv):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, argv)
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    return task.build_model(cfg.model), cfg


ENCODERS = {
    "bert2d_wwa": (
        "pieces_bpe",
        ["--arch", "bert2d_tiny", "--whole-word-attention", "--relative-positions", "4"],
    ),
    "bert_elmo": ("words", ["--arch", "bert_elmo_tiny"]),
    "roberta": (
        "pieces_bpe",
        [
            "--arch",
            "roberta",
            "--encoder-layers",
            "1",
            "--encoder-embed-dim",
            "32",
            "--encoder-ffn-embed-dim",
            "64",
            "--encoder-attention-heads",
            "2",
        ],
    ),
}


@pytest.mark.parametrize("encoder", sorted(ENCODERS))
@pytest.mark.parametrize("finetune_task", ["ner", "qa"])
def test_pretrained_weights_load_into_the_fine_tuning_model(
    encoder, finetune_task, request, tmp_path
):
    run_name, arch = ENCODERS[encoder]
    run = request.getfixturevalue(run_name)
    common = ["--user-dir", USER_DIR, "--max-positions", "32", *arch]
    torch.manual_seed(0)
    pretrained, _ = _build(
        [
            str(run),
            "--task",
            "masked_lm_struct",
            "--criterion",
            "masked_lm_struct",
            "--sentence-objective",
            "sop",
            "--tokens-per-sample",
            "32",
            *(["--tokens-are-words"] if run_name == "words" else []),
            *common,
        ]
    )
    state = pretrained.state_dict()
    assert any(key.startswith("classification_heads.sentence_pair.") for key in state)

    if finetune_task == "ner":
        (tmp_path / "t.conll").write_text("Çocukzz\tB-PER\nuyudu\tO\n.\tO\n", "utf-8")
        args = ["--train", tmp_path / "t.conll", "--valid", tmp_path / "t.conll"]
        task_args = [
            "--task",
            "token_classification",
            "--criterion",
            "token_classification",
            "--head",
            "lcrf_ner",
        ]
    else:
        qa = (
            '{"data": [{"title": "t", "paragraphs": [{"context": "Kedizz bahçede uyudu .", '
            '"qas": [{"id": "1", "question": "Kedizz nerede uyudu ?", "answers": '
            '[{"text": "bahçede", "answer_start": 7}]}]}]}]}'
        )
        (tmp_path / "qa.json").write_text(qa, "utf-8")
        args = ["--train", tmp_path / "qa.json", "--valid", tmp_path / "qa.json"]
        task_args = ["--task", "extractive_qa", "--criterion", "extractive_qa"]
    assert (
        prepare(
            [
                finetune_task,
                "--pretraining-data",
                str(run),
                "--out-dir",
                str(tmp_path / "d"),
                "--max-positions",
                "32",
                *map(str, args),
            ]
        )
        == 0
    )
    torch.manual_seed(1)
    model, cfg = _build([str(tmp_path / "d"), *task_args, *common])
    fresh_head = {k: v.clone() for k, v in model.classification_heads.state_dict().items()}
    model.load_state_dict(dict(state), strict=True, model_cfg=cfg.model)

    loaded = model.state_dict()
    grown = []
    for key, value in state.items():
        if key.startswith("classification_heads.sentence_pair."):
            assert key not in loaded  # the pretraining head is dropped
        elif key.startswith("encoder.lm_head.") and loaded[key].shape != value.shape:
            assert encoder == "bert_elmo"  # new words appended: the output grows
            assert torch.equal(loaded[key][: value.size(0)], value)
            grown.append(key)
        else:
            assert torch.equal(loaded[key], value), key
    # BERT-ELMo's new word "...zz" made its MLM output grow (weight and bias).
    assert len(grown) == (2 if encoder == "bert_elmo" else 0)
    for key, value in model.classification_heads.state_dict().items():
        assert torch.equal(value, fresh_head[key])  # the new head keeps its initialisation


def test_prediction_gives_bert_elmo_new_words_their_own_character_embedding():
    from fairseq_struct.downstream.prediction import add_unseen_words
    from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary

    dictionary = joined_dictionary(20)
    model = build_model_from_arch(
        "bert_elmo_tiny", dictionary, seed=0, tokens_are_words=True
    ).eval()
    embed = model.encoder.sentence_encoder.embed_tokens
    assert add_unseen_words(model, dictionary, [[["w3"], ["Kedizz", "'", "w3"]]]) == 2
    new = torch.tensor([dictionary.index("Kedizz"), dictionary.index("'")])
    assert new.tolist() == [20, 21]
    with torch.no_grad():
        assert torch.allclose(embed(new), embed.embed_words(["Kedizz", "'"]), atol=1e-6)
        assert not torch.allclose(embed(new[:1]), embed(torch.tensor([dictionary.unk()])))
        # The whole encoder takes the new ids: each is a word of its own (it failed with an
        # IndexError in the word-structure lookup, sized for the dictionary the model was made
        # with, on any test file with an unseen word).
        tokens = torch.tensor([[dictionary.bos(), *new.tolist(), dictionary.eos()]])
        features, _ = model(tokens, features_only=True)
    assert features.shape[:2] == (1, 4)
    assert model.encoder.sentence_encoder.word_start_lookup.tolist() == [True] * len(dictionary)
