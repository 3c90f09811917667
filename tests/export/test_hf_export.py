"""`python -m fairseq_struct.export.hf`: a checkpoint becomes a transformers model directory that
computes what fairseq computes and tokenizes as the preparation did.

Checkpoints: BERT2D from a real `fairseq-train` run (conftest's `pretrained_bert2d`: 2D positions
and relative positions on SentencePiece pieces of demo-grammar Turkish), and models built
in-process from fairseq-train's own argument parser, task and `build_model`, with every weight
moved away from its initial value (so that a weight the export dropped or misplaced shows):
Whole-Word Attention, a pre-norm BERT2D, BERT-ELMo, stock roberta, a CRF token-classification
head and sentence-classification heads. Each is loaded with `Auto*.from_pretrained(...,
trust_remote_code=True)` and compared with fairseq on CPU in eval mode within 1e-5.
"""

import json
import subprocess
import sys
from pathlib import Path
from typing import List, Sequence

import pytest
import torch
from conftest import REPO_ROOT, USER_DIR

transformers = pytest.importorskip(
    "transformers",
    reason="the Hugging Face export needs the optional extras: pip install fairseq-struct[hf]",
)

import fairseq_struct.plugin  # noqa: E402,F401  (registers the models and tasks, allow-lists checkpoints)
from fairseq_struct.export import hf, hf_directory  # noqa: E402

TOLERANCE = 1e-5
MLM_TASK = ["--task", "masked_lm_struct", "--criterion", "masked_lm_struct"]
TINY_ROBERTA = [
    "--arch",
    "roberta",
    "--encoder-layers",
    "2",
    "--encoder-embed-dim",
    "64",
    "--encoder-ffn-embed-dim",
    "128",
    "--encoder-attention-heads",
    "4",
]


# ----------------------------------------------------------------------------- helpers


def build_checkpoint(path: Path, train_args: Sequence[str], seed: int = 0) -> Path:
    """A checkpoint of the model `fairseq-train train_args` would build, saved as fairseq's
    trainer saves one, with every parameter moved by noise (BERT's initialisation leaves
    biases at 0 and layer norms at 1, which would hide a dropped one)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [*train_args, "--user-dir", USER_DIR, "--cpu", "--max-positions", "64"]
    )
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(seed)  # the initial weights, so that every run tests the same model
    model = task.build_model(cfg.model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            scale = 1.0 if ".crf." in name else 0.1  # CRF transitions that change Viterbi paths
            parameter.add_(scale * torch.randn(parameter.shape, generator=generator))
    torch.save(
        {
            "args": None,
            "cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
            "model": model.state_dict(),
            "criterion": None,
            "optimizer_history": [
                {
                    "criterion_name": "built-in-test",
                    "optimizer_name": "none",
                    "lr_scheduler_state": {},
                    "num_updates": 0,
                }
            ],
            "task_state": {},
            "extra_state": {"train_iterator": {"epoch": 1}},
        },
        path,
    )
    return path


def load_fairseq(checkpoint: Path):
    from fairseq import checkpoint_utils

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)])
    return models[0].eval(), task


def export_dir(checkpoint: Path, out: Path, *options: str) -> Path:
    assert hf.main([str(checkpoint), str(out), *options]) == 0
    return out


def assert_close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: {actual.shape} != {expected.shape}"
    difference = float((actual.detach().float() - expected.detach().float()).abs().max())
    assert difference <= TOLERANCE, f"{what}: largest difference {difference:.3g}"


def binarized(data: Path, split: str, dictionary_path: Path) -> List[List[int]]:
    from fairseq.data import Dictionary, data_utils

    dictionary = Dictionary.load(str(dictionary_path))
    dataset = data_utils.load_indexed_dataset(str(data / split), dictionary)
    return [dataset[index].tolist() for index in range(len(dataset))]


@torch.no_grad()
def assert_encoder_matches(model, hf_model, ids: torch.Tensor, pad: int, all_positions: bool):
    """Every layer's hidden states (fairseq's inner_states) and the last one."""
    features, extra = model(ids, features_only=True, return_all_hiddens=True)
    output = hf_model(input_ids=ids, attention_mask=ids.ne(pad).long(), output_hidden_states=True)
    real = ids.ne(pad) if not all_positions else torch.ones_like(ids, dtype=torch.bool)
    expected = [state.transpose(0, 1) for state in extra["inner_states"]]
    assert len(output.hidden_states) == len(expected)
    for layer, (actual, wanted) in enumerate(zip(output.hidden_states, expected)):
        assert_close(actual[real], wanted[real], f"hidden states of layer {layer}")
    assert_close(output.last_hidden_state[real], features[real], "last hidden state")


def padded(rows: Sequence[Sequence[int]], pad: int) -> torch.Tensor:
    width = max(map(len, rows))
    return torch.tensor([list(row) + [pad] * (width - len(row)) for row in rows])


def head_name(task) -> str:
    return task.cfg.classification_head_name


def valid_lines(pretraining_text: Path, count: int = 8) -> List[str]:
    return (pretraining_text / "valid.txt").read_text("utf-8").splitlines()[:count]


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def bert2d_export(pretrained_bert2d, tmp_path_factory) -> Path:
    return export_dir(pretrained_bert2d, tmp_path_factory.mktemp("bert2d") / "hf")


@pytest.fixture(scope="module")
def ner_data(pieces_bpe, pretraining_text, tmp_path_factory) -> Path:
    """NER data of `downstream.prepare` on the pretraining units: LOC over the first two words,
    PER on the fourth, so that the label set has a forbidden transition (O -> I-LOC)."""
    from fairseq_struct.downstream import prepare

    root = tmp_path_factory.mktemp("ner")
    blocks = []
    for line in valid_lines(pretraining_text, 30):
        words = line.replace(".", " .").replace("?", " ?").split()
        tags = ["B-LOC", "I-LOC", "O", "B-PER"] + ["O"] * len(words)
        blocks.append("\n".join(f"{w}\t{t}" for w, t in zip(words, tags)))
    conll = root / "train.conll"
    conll.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    arguments = ["ner", "--pretraining-data", str(pieces_bpe), "--train", str(conll)]
    out = root / "data"
    assert prepare.main([*arguments, "--valid", str(conll), "--out-dir", str(out)]) == 0
    return out


def sentiment_data(units_dir: Path, pretraining_text: Path, out: Path) -> Path:
    from fairseq_struct.downstream import prepare

    lines = valid_lines(pretraining_text, 20)
    (out / "t.good").write_text("\n".join(lines[:10]) + "\n", "utf-8")
    (out / "t.bad").write_text("\n".join(lines[10:]) + "\n", "utf-8")
    files = [str(out / "t.good"), str(out / "t.bad")]
    arguments = ["sentiment", "--pretraining-data", str(units_dir), "--train", *files]
    assert prepare.main([*arguments, "--valid", *files, "--out-dir", str(out / "data")]) == 0
    return out / "data"


# ----------------------------------------------------------------------------- masked LM


def test_bert2d_of_fairseq_train_matches_fairseq_with_multi_piece_words(
    pretrained_bert2d, bert2d_export, pretraining_text
):
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

    model, task = load_fairseq(pretrained_bert2d)
    tokenizer = AutoTokenizer.from_pretrained(bert2d_export, trust_remote_code=True)
    lines = valid_lines(pretraining_text)
    ids = tokenizer(lines[:4], lines[4:], padding=True, return_tensors="pt")["input_ids"]
    pad = task.source_dictionary.pad()
    # Multi-piece words: word positions (BERT2D's p_word) differ from token positions.
    starts = model.encoder.sentence_encoder.word_start_lookup[ids]
    assert bool((~starts & ids.ne(pad)).any())

    masked_lm = AutoModelForMaskedLM.from_pretrained(bert2d_export, trust_remote_code=True).eval()
    assert type(masked_lm).__name__ == "StructEncoderForMaskedLM"
    assert masked_lm.config.position_embedding == "2d"
    assert masked_lm.config.relative_positions == 4
    assert_encoder_matches(model, masked_lm.encoder, ids, pad, all_positions=True)
    with torch.no_grad():
        logits, _ = model(ids)
        assert_close(masked_lm(input_ids=ids).logits, logits, "masked-LM logits")
    encoder = AutoModel.from_pretrained(bert2d_export, trust_remote_code=True).eval()
    assert type(encoder).__name__ == "StructEncoderModel"
    assert_encoder_matches(model, encoder, ids, pad, all_positions=True)

    report = json.loads((bert2d_export / hf_directory.EXPORT_REPORT).read_text())
    assert report["remote_code"] and report["units"] == "pieces" and report["mode"] == "bpe"
    assert report["parity_max_abs_difference"]["logits"] <= TOLERANCE


def test_piece_tokenizer_gives_the_ids_of_the_binarized_data(
    bert2d_export, pieces_bpe, pretraining_text
):
    from transformers import AutoTokenizer

    from fairseq_struct.morph.sentencepiece_model import SentencePieceModel
    from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY

    tokenizer = AutoTokenizer.from_pretrained(bert2d_export, trust_remote_code=True)
    lines = (pretraining_text / "valid.txt").read_text("utf-8").splitlines()
    binarized_lines = binarized(pieces_bpe, "valid", pieces_bpe / "dict.txt")
    assert len(lines) == len(binarized_lines)
    for line, ids in zip(lines, binarized_lines):  # fairseq-preprocess appends </s>
        assert tokenizer(line)["input_ids"] == [tokenizer.bos_token_id] + ids, line
    # Segmented (morph-mode) text: the boundary marks end pieces and are no units.
    segmented = f"ev{MORPHEME_BOUNDARY}ler{MORPHEME_BOUNDARY}de  kal{MORPHEME_BOUNDARY}dı ."
    expected = SentencePieceModel(pieces_bpe / "spm.model").encode(" ".join(segmented.split()))
    assert tokenizer.tokenize(segmented) == expected
    assert tokenizer.convert_tokens_to_string(expected) == "evlerde kaldı ."
    encoded = tokenizer.encode_words(["evlerde", "kaldı", "."])
    assert encoded["input_ids"] == tokenizer("evlerde kaldı .")["input_ids"]


def first_sep_segments(ids: torch.Tensor, eos: int) -> torch.Tensor:
    """fairseq's segments: 0 up to and including the first </s>, 1 after (padding too)."""
    is_eos = ids.eq(eos).long()
    return ((is_eos.cumsum(dim=1) - is_eos) > 0).long()


def test_bert2d_export_takes_token_type_ids(pretrained_bert2d, bert2d_export, pretraining_text):
    """The types its tokenizer returns on request, and BERT's (0 on padding), give fairseq's
    outputs; other types are used as given (segment 1's tokens read row 0 when given 0);
    a type the segment table lacks is an error naming its position."""
    import copy

    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model, task = load_fairseq(pretrained_bert2d)
    pad, eos = task.source_dictionary.pad(), task.source_dictionary.eos()
    tokenizer = AutoTokenizer.from_pretrained(bert2d_export, trust_remote_code=True)
    assert tokenizer.create_token_type_ids_from_sequences([7, 8], [9]) == [0, 0, 0, 0, 1, 1]
    assert tokenizer.create_token_type_ids_from_sequences([7, 8]) == [0, 0, 0, 0]
    masked_lm = AutoModelForMaskedLM.from_pretrained(bert2d_export, trust_remote_code=True).eval()
    assert masked_lm.config.num_segments == 2
    lines = valid_lines(pretraining_text)
    options = dict(padding=True, return_token_type_ids=True, return_tensors="pt")
    batches = {
        "single": tokenizer(lines[:6], **options),
        "pairs": tokenizer(lines[:4], lines[4:], **options),
    }
    for kind, batch in batches.items():
        ids = batch["input_ids"]
        real = ids.ne(pad)
        assert not bool(real.all()), "the batch must have padding"
        rule = first_sep_segments(ids, eos)
        assert torch.equal(batch["token_type_ids"][real], rule[real])
        assert bool(rule[real].any()) == (kind == "pairs")  # padding: 1 after the </s>
        with torch.no_grad():
            features, _ = model(ids, features_only=True)
            logits, _ = model(ids)
            for types in (batch["token_type_ids"], rule * real.long()):  # ours, BERT's
                out = masked_lm(**dict(batch, token_type_ids=types), output_hidden_states=True)
                assert_close(out.hidden_states[-1], features, f"{kind}: hidden states")
                assert_close(out.logits[real], logits[real], f"{kind}: masked-LM logits")

    batch = batches["pairs"]
    zeros = dict(batch, token_type_ids=torch.zeros_like(batch["token_type_ids"]))
    same_rows = copy.deepcopy(masked_lm)
    segments = same_rows.encoder.embed_positions.segments.weight
    with torch.no_grad():
        segments[1] = segments[0]
        given = masked_lm(**zeros).logits
        expected = same_rows(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        as_the_rule = masked_lm(**batch).logits
    real = batch["attention_mask"].bool()
    assert_close(given[real], expected.logits[real], "token types used as given")
    assert float((given - as_the_rule)[real].abs().max()) > 1e-3

    beyond = batch["token_type_ids"].clone()
    beyond[1, 2], beyond[0, 3] = 2, 2
    with pytest.raises(
        ValueError, match=r"token_type_ids\[0, 3\] is 2 where this model's segment is 0"
    ):
        masked_lm(**dict(batch, token_type_ids=beyond))


def test_a_bert2d_without_segments_takes_only_the_token_types_of_its_rule(
    pieces_bpe, pretraining_text, tmp_path
):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    checkpoint = build_checkpoint(
        tmp_path / "checkpoint.pt",
        [str(pieces_bpe), *MLM_TASK, "--arch", "bert2d_tiny", "--num-segments", "0"],
    )
    out = export_dir(checkpoint, tmp_path / "hf")
    model, task = load_fairseq(checkpoint)
    tokenizer = AutoTokenizer.from_pretrained(out, trust_remote_code=True)
    masked_lm = AutoModelForMaskedLM.from_pretrained(out, trust_remote_code=True).eval()
    assert masked_lm.config.num_segments == 0
    lines = valid_lines(pretraining_text)
    batch = tokenizer(
        lines[:4], lines[4:], padding=True, return_token_type_ids=True, return_tensors="pt"
    )
    real = batch["input_ids"].ne(task.source_dictionary.pad())
    with torch.no_grad():
        logits, _ = model(batch["input_ids"])
        assert_close(masked_lm(**batch).logits[real], logits[real], "masked-LM logits")
    zeros = dict(batch, token_type_ids=torch.zeros_like(batch["token_type_ids"]))
    first = int(batch["input_ids"][0].eq(task.source_dictionary.eos()).nonzero()[0]) + 1
    with pytest.raises(ValueError, match=rf"token_type_ids\[0, {first}\] is 0 .* has 0 rows"):
        masked_lm(**zeros)


@pytest.mark.parametrize(
    "options",
    [
        ["--whole-word-attention", "--position-embedding", "none", "--num-segments", "2"],
        [
            "--encoder-normalize-before",
            "--max-intermediate-subwords",
            "1",
            "--subword-id-strategy",
            "paper",
            "--activation-fn",
            "gelu_accurate",
            "--relative-positions",
            "2",
        ],
    ],
    ids=["whole_word_attention", "prenorm_paper_subwords_relative"],
)
def test_bert2d_encoder_options_match_fairseq(options, pieces_bpe, pretraining_text, tmp_path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    checkpoint = build_checkpoint(
        tmp_path / "checkpoint.pt", [str(pieces_bpe), *MLM_TASK, "--arch", "bert2d_tiny", *options]
    )
    out = export_dir(checkpoint, tmp_path / "hf")
    model, task = load_fairseq(checkpoint)
    tokenizer = AutoTokenizer.from_pretrained(out, trust_remote_code=True)
    lines = valid_lines(pretraining_text)
    ids = tokenizer(lines[:4], lines[4:], padding=True, return_tensors="pt")["input_ids"]
    masked_lm = AutoModelForMaskedLM.from_pretrained(out, trust_remote_code=True).eval()
    pad = task.source_dictionary.pad()
    assert_encoder_matches(model, masked_lm.encoder, ids, pad, all_positions=True)
    with torch.no_grad():
        assert_close(masked_lm(input_ids=ids).logits, model(ids)[0], "masked-LM logits")


def test_bert_elmo_export_matches_fairseq_and_tokenizes_words(words, tmp_path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    checkpoint = build_checkpoint(
        tmp_path / "checkpoint.pt",
        [str(words), *MLM_TASK, "--tokens-are-words", "--arch", "bert_elmo_tiny"]
        + ["--output-vocab-size", "60", "--encoder-layers", "1"],
    )
    out = export_dir(checkpoint, tmp_path / "hf")
    tokenizer = AutoTokenizer.from_pretrained(out, trust_remote_code=True)
    assert type(tokenizer).__name__ == "StructWordTokenizer"
    lines = (words / "text" / "valid.txt").read_text("utf-8").splitlines()
    binarized_lines = binarized(words, "valid", words / "dict.txt")
    for line, ids in zip(lines, binarized_lines):
        assert tokenizer(line)["input_ids"] == [tokenizer.bos_token_id] + ids, line

    model, task = load_fairseq(checkpoint)
    ids = tokenizer(lines[:3], lines[3:6], padding=True, return_tensors="pt")["input_ids"]
    masked_lm = AutoModelForMaskedLM.from_pretrained(out, trust_remote_code=True).eval()
    assert masked_lm.config.token_embedding == "characters"
    assert_encoder_matches(model, masked_lm.encoder, ids, task.source_dictionary.pad(), True)
    with torch.no_grad():
        logits, expected = masked_lm(input_ids=ids).logits, model(ids)[0]
    assert logits.size(-1) == 60
    assert_close(logits, expected, "masked-LM logits over the 60 most frequent words")


def test_stock_roberta_becomes_transformers_own_roberta(pieces_bpe, pretraining_text, tmp_path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer, RobertaForMaskedLM

    checkpoint = build_checkpoint(
        tmp_path / "checkpoint.pt", [str(pieces_bpe), *MLM_TASK, *TINY_ROBERTA]
    )
    out = export_dir(checkpoint, tmp_path / "hf")
    assert json.loads((out / "config.json").read_text())["model_type"] == "roberta"
    assert not (out / "modeling_struct_encoder.py").exists()
    masked_lm = AutoModelForMaskedLM.from_pretrained(out).eval()  # no remote code
    assert isinstance(masked_lm, RobertaForMaskedLM)
    tokenizer = AutoTokenizer.from_pretrained(out, trust_remote_code=True)
    lines = valid_lines(pretraining_text)
    batch = tokenizer(lines, padding=True, return_tensors="pt")
    model, task = load_fairseq(checkpoint)
    ids, pad = batch["input_ids"], task.source_dictionary.pad()
    assert_encoder_matches(model, masked_lm.roberta, ids, pad, all_positions=False)
    real = ids.ne(pad)
    with torch.no_grad():
        logits = masked_lm(**batch).logits
        assert_close(logits[real], model(ids)[0][real], "masked-LM logits")


# ----------------------------------------------------------------------------- fine-tuned heads


@pytest.mark.parametrize("head_layers", [2, 1])
def test_crf_token_classification_exports_emissions_transitions_and_viterbi(
    head_layers, ner_data, tmp_path
):
    """Either head shape: RoBERTa's (dense, activation, out_proj) or BERT's (one layer)."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from fairseq_struct.modules.token_classification_heads import gather_words
    from fairseq_struct.tagging.iob import entity_fix

    checkpoint = build_checkpoint(
        tmp_path / "checkpoint.pt",
        [str(ner_data), "--task", "token_classification", "--criterion", "token_classification"]
        + ["--head", "lcrf_ner", "--entity-fix", "--arch", "bert2d_tiny"]
        + ["--head-layers", str(head_layers)],
    )
    out = export_dir(checkpoint, tmp_path / "hf")
    tagger = AutoModelForTokenClassification.from_pretrained(out, trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(out, trust_remote_code=True)
    model, task = load_fairseq(checkpoint)
    head = model.classification_heads["token_classification_head"]
    assert list(tagger.config.id2label.values()) == head.labels
    assert tagger.config.token_head == "lcrf_ner" and tagger.config.entity_fix
    assert tagger.config.token_head_layers == head_layers
    assert (tagger.classifier.dense is None) == (head_layers == 1) == (head.dense is None)

    # The tokenizer gives prepare's ids, and its word mask marks the labelled units.
    conll = (ner_data.parent / "train.conll").read_text("utf-8").strip().split("\n\n")
    sentences = [[row.split("\t")[0] for row in block.splitlines()] for block in conll]
    tokens = binarized(ner_data / "input0", "valid", ner_data / "input0" / "dict.txt")
    labels = binarized(ner_data / "labels", "valid", ner_data / "labels" / "dict.txt")
    encoded = [tokenizer.encode_words(words) for words in sentences]
    assert [item["input_ids"] for item in encoded] == tokens
    label_pad = task.label_dictionary.pad()
    assert [item["word_mask"] for item in encoded] == [
        [label != label_pad for label in row] for row in labels
    ]

    pad = task.source_dictionary.pad()
    ids = padded(tokens[:8], pad)
    word_mask = padded([item["word_mask"] for item in encoded[:8]], False).bool()
    with torch.no_grad():
        emissions, _ = model(ids, features_only=True, classification_head_name=head_name(task))
        logits = tagger(input_ids=ids, attention_mask=ids.ne(pad).long()).logits
    assert_close(logits, emissions, "CRF emission scores")
    assert_close(tagger.crf.transitions(), head.crf.transitions(), "CRF transitions (eq. 7)")
    expected = [entity_fix(tags) for tags in head.decode(*gather_words(emissions, word_mask))]
    decoded = tagger.decode(ids, attention_mask=ids.ne(pad).long(), word_mask=word_mask)
    assert decoded == expected
    # Every unit is in the dictionary here, so the dictionary's word starts are the same mask.
    assert torch.equal(tagger.default_word_mask(ids, ids.ne(pad).long()), word_mask)
    assert tagger.decode(ids, attention_mask=ids.ne(pad).long()) == expected
    # The case is not trivial: Viterbi differs from the per-word argmax, Entity-Fix changes tags.
    words, mask = gather_words(emissions, word_mask)
    argmax = [row[:n] for row, n in zip(words.argmax(-1).tolist(), mask.sum(1).tolist())]
    viterbi = tagger.crf.viterbi_decode(words, mask)
    assert any(row != viterbi[i, : len(row)].tolist() for i, row in enumerate(argmax))
    assert decoded != tagger.decode(ids, ids.ne(pad).long(), word_mask, entity_fix_rule=False)


@pytest.mark.parametrize("encoder", ["roberta", "bert_elmo"])
def test_sentence_classification_head_matches_fairseq(
    encoder, pieces_bpe, words, pretraining_text, tmp_path
):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    units_dir = pieces_bpe if encoder == "roberta" else words
    data = sentiment_data(units_dir, pretraining_text, tmp_path)
    arch = TINY_ROBERTA if encoder == "roberta" else ["--arch", "bert_elmo_tiny"]
    checkpoint = build_checkpoint(
        tmp_path / "checkpoint.pt",
        [str(data), "--task", "sentence_prediction", "--criterion", "sentence_prediction"]
        + ["--num-classes", "2", "--init-token", "0", "--separator-token", "2", *arch],
    )
    out = export_dir(checkpoint, tmp_path / "hf")
    classifier = AutoModelForSequenceClassification.from_pretrained(
        out, trust_remote_code=True
    ).eval()
    native = encoder == "roberta"  # transformers' own class, else the exported code
    assert type(classifier).__name__ == (
        "RobertaForSequenceClassification" if native else "StructEncoderForSequenceClassification"
    )
    assert sorted(classifier.config.id2label.values()) == ["bad", "good"]
    model, task = load_fairseq(checkpoint)
    bos, pad = task.source_dictionary.bos(), task.source_dictionary.pad()
    tokens = [
        [bos] + row for row in binarized(data / "input0", "valid", data / "input0" / "dict.txt")
    ]
    if native:  # raw text, through the tokenizer, gives the binarized ids
        tokenizer = AutoTokenizer.from_pretrained(out, trust_remote_code=True)
        assert tokenizer(valid_lines(pretraining_text, 10))["input_ids"] == tokens[:10]
    ids = padded(tokens[:12], pad)
    with torch.no_grad():
        expected, _ = model(ids, features_only=True, classification_head_name=head_name(task))
        logits = classifier(input_ids=ids, attention_mask=ids.ne(pad).long()).logits
    assert_close(logits, expected, "sentence classification logits")


# ----------------------------------------------------------------------------- clear errors


@pytest.mark.parametrize(
    "options, named",
    [
        (
            ["--task", "token_classification", "--head", "cse", "--arch", "bert2d_tiny"],
            "--head cse",
        ),
        ([*MLM_TASK, *TINY_ROBERTA, "--quant-noise-pq", "0.1"], "--quant-noise-pq"),
    ],
    ids=["cse_head", "quantization_noise"],
)
def test_an_option_the_export_cannot_compute_is_an_error_naming_it(
    options, named, ner_data, pieces_bpe, tmp_path, capsys
):
    data = ner_data if "token_classification" in options else pieces_bpe
    checkpoint = build_checkpoint(tmp_path / "checkpoint.pt", [str(data), *options])
    assert hf.main([str(checkpoint), str(tmp_path / "hf")]) == 1
    error = capsys.readouterr().err
    assert named in error and "cannot be exported" in error
    assert not (tmp_path / "hf").exists()  # nothing written


def test_without_transformers_the_command_says_what_to_install_and_the_plugin_never_imports_it():
    script = (
        "import runpy, sys\n"
        "import fairseq_struct, fairseq_struct.export.hf\n"
        "assert 'transformers' not in sys.modules, 'importing the plugin imported transformers'\n"
        "sys.modules['transformers'] = None  # as if it were not installed\n"
        "sys.argv = ['hf', 'checkpoint.pt', 'out']\n"
        "runpy.run_module('fairseq_struct.export.hf', run_name='__main__')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "pip install fairseq-struct[hf]" in result.stderr


def test_an_export_loads_and_runs_without_fairseq(bert2d_export, tmp_path):
    script = (
        "import sys\n"
        "for name in ('fairseq', 'fairseq_struct', 'fairseq_cli'):\n"
        "    sys.modules[name] = None  # as if they were not installed\n"
        "from transformers import AutoModelForMaskedLM, AutoTokenizer\n"
        f"path = {str(bert2d_export)!r}\n"
        "tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)\n"
        "model = AutoModelForMaskedLM.from_pretrained(path, trust_remote_code=True).eval()\n"
        "batch = tokenizer(['evlerde kaldı .', 'kitap'], padding=True, return_tensors='pt')\n"
        "print(tuple(model(**batch).logits.shape))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1].startswith("(2, ")
