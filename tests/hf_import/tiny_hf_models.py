"""Tiny random Hugging Face models of every class the importer takes, saved with transformers'
own `save_pretrained` (the BERT2D layout by hand: the authors' code is not in transformers),
with vocabularies trained here on real Turkish text: a cased and an uncased WordPiece
vocabulary (the `tokenizers` library, as BERTurk's) and a SentencePiece one (XLM-R's kind).

The weights are drawn far from BERT's initialisation (layer norms and biases too), so that a
weight put in the wrong place, a wrong epsilon or a wrong position offset shows in the outputs.
"""

import io
import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
import torch
from conftest import SHARED_DATA

# Real Turkish text (../shared/data); the tests that read it skip, saying so, where it is absent.
TURKISH_TEXT = SHARED_DATA / "tr-raw" / "tr_wikiner_train_sentences.txt"
NEEDS_TURKISH_TEXT = pytest.mark.skipif(
    not TURKISH_TEXT.exists(), reason=f"needs real Turkish text: {TURKISH_TEXT} is absent"
)
BERT2D_M = (1, 2, 3, 10)

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
DIMENSIONS = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


def wordpiece_tokenizer(lines: List[str], out: Path, lowercase: bool, vocab_size: int = 700):
    """A BERT tokenizer (transformers') over a WordPiece vocabulary trained on `lines`."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizer

    trainer = BertWordPieceTokenizer(
        lowercase=lowercase, strip_accents=None if lowercase else False
    )
    trainer.train_from_iterator(lines, vocab_size=vocab_size, special_tokens=SPECIALS)
    out.mkdir(parents=True, exist_ok=True)
    trainer.save_model(str(out))
    tokenizer = BertTokenizer(vocab=str(out / "vocab.txt"), do_lower_case=lowercase)
    tokenizer.save_pretrained(str(out))
    return tokenizer


def sentencepiece_tokenizer(lines: List[str], out: Path, vocab_size: int = 500):
    """An XLM-R tokenizer over a SentencePiece unigram model trained on `lines` (XLM-R's ids:
    <s> <pad> </s> <unk>, the pieces, <mask> last)."""
    import sentencepiece
    from transformers import XLMRobertaTokenizer

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        bos_id=-1,
        eos_id=-1,
        unk_id=0,
        minloglevel=2,
    )
    processor = sentencepiece.SentencePieceProcessor(model_proto=model.getvalue())
    pieces = [
        (processor.id_to_piece(i), processor.get_score(i))
        for i in range(processor.get_piece_size())
        if processor.id_to_piece(i) != "<unk>"
    ]
    vocab = [(token, 0.0) for token in ("<s>", "<pad>", "</s>", "<unk>")] + pieces
    tokenizer = XLMRobertaTokenizer(vocab=vocab + [("<mask>", 0.0)])
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(out))
    return tokenizer


def scramble(model: torch.nn.Module, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            scale = 0.3 if "LayerNorm" in name or "layer_norm" in name else 0.08
            noise = torch.randn(parameter.shape, generator=generator) * scale
            parameter.copy_((1.0 if name.endswith("LayerNorm.weight") else 0.0) + noise)


def save_bert(out: Path, tokenizer, model_class: str, seed: int = 0, **config) -> None:
    import transformers

    bert_config = transformers.BertConfig(
        vocab_size=len(tokenizer.get_vocab()),
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        **{**DIMENSIONS, **config},
    )
    model = getattr(transformers, model_class)(bert_config)
    scramble(model, seed)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))


def save_xlmr(out: Path, tokenizer, seed: int = 0) -> None:
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    config = XLMRobertaConfig(
        vocab_size=len(tokenizer.get_vocab()),
        max_position_embeddings=66,
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        **DIMENSIONS,
    )
    model = XLMRobertaForMaskedLM(config)
    scramble(model, seed)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))


def save_bert2d(
    out: Path,
    tokenizer,
    subword_rows: int,
    seed: int = 0,
    words: int = 64,
    tokens: Optional[int] = 64,
) -> None:
    """The published BERT2D layout: a BertForPreTraining's weights under `bert2d.`, its 1D table
    replaced by `whole_word_embeddings` (`words` rows) and `subword_embeddings` (M + 2 rows); the
    config's `max_position_embeddings` is the limit in tokens (`tokens`; None: not named), as
    the published config has it (both tables 512 there)."""
    from safetensors.torch import save_file
    from transformers import BertConfig, BertForPreTraining

    config = BertConfig(
        vocab_size=len(tokenizer.get_vocab()),
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        **DIMENSIONS,
    )
    model = BertForPreTraining(config)
    scramble(model, seed)
    generator = torch.Generator().manual_seed(seed + 1)
    weights: Dict[str, torch.Tensor] = {}
    for key, value in model.state_dict().items():
        if key.endswith(("position_embeddings.weight", "position_ids")):
            continue
        if key == "cls.predictions.decoder.weight":
            continue  # tied to the word embeddings
        weights[key.replace("bert.", "bert2d.", 1)] = value.clone()
    weights["bert2d.embeddings.whole_word_embeddings.weight"] = (
        torch.randn(words, config.hidden_size, generator=generator) * 0.08
    )
    weights["bert2d.embeddings.subword_embeddings.weight"] = (
        torch.randn(subword_rows, config.hidden_size, generator=generator) * 0.08
    )
    out.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    bert2d_config = {
        **config.to_dict(),
        "model_type": "bert2d",
        "architectures": ["Bert2DForPreTraining"],
        "max_word_position_embeddings": words,
        "max_intermediate_subword_position_embeddings": subword_rows - 2,
    }
    if tokens is None:
        bert2d_config.pop("max_position_embeddings", None)
    else:
        bert2d_config["max_position_embeddings"] = tokens
    (out / "config.json").write_text(json.dumps(bert2d_config, indent=2), encoding="utf-8")
    tokenizer.save_pretrained(str(out))
    tokenizer_config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    tokenizer_config.update(
        max_intermediate_subword_positions_per_word=subword_rows - 2,
        subword_embedding_order="ending_first",
        intermediate_subword_distribution_strategy="uniform",
    )
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config), encoding="utf-8")


def bert2d_reference(source: Path, m: int):
    """Stock BertForPreTraining holding the BERT2D weights, its 1D position table zeroed."""
    from safetensors.torch import load_file
    from transformers import BertConfig, BertForPreTraining

    weights = load_file(str(source / "model.safetensors"))
    config = BertConfig.from_pretrained(str(source))
    config.max_position_embeddings = 64
    model = BertForPreTraining(config).eval()
    state = {k.replace("bert2d.", "bert.", 1): v for k, v in weights.items()}
    tables = {
        name: state.pop(f"bert.embeddings.{name}.weight")
        for name in ("whole_word_embeddings", "subword_embeddings")
    }
    state["bert.embeddings.position_embeddings.weight"] = torch.zeros(64, config.hidden_size)
    model.load_state_dict(state, strict=False)
    model.tie_weights()
    model.bert2d_m = m
    return model, tables


def bert2d_reference_outputs(reference, tables: Dict[str, torch.Tensor], tokenizer, batch):
    """The published BERT2D's outputs on a tokenized batch: `reference` given the word + 2D
    position embeddings of `bert2d_reference_ids` as `inputs_embeds`; and those ids."""
    ids = [
        bert2d_reference_ids(tokenizer.convert_ids_to_tokens(row.tolist()), reference.bert2d_m)
        for row in batch["input_ids"]
    ]
    word_ids = torch.tensor([row[0] for row in ids])
    subword_ids = torch.tensor([row[1] for row in ids])
    embeds = (
        reference.bert.embeddings.word_embeddings(batch["input_ids"])
        + tables["whole_word_embeddings"][word_ids]
        + tables["subword_embeddings"][subword_ids]
    )
    with torch.no_grad():
        out = reference(
            inputs_embeds=embeds,
            token_type_ids=batch["token_type_ids"],
            attention_mask=batch["attention_mask"],
            output_hidden_states=True,
        )
    return out, word_ids, subword_ids


def long_word_lines(tokenizer, lines: List[str]) -> List[str]:
    """Lines whose words, together, have every length from 1 to 12 pieces."""
    chosen, lengths = [], set()
    for line in lines:
        found = {len(tokenizer.tokenize(word)) for word in line.split()} & set(range(1, 13))
        if found - lengths:
            chosen.append(line)
            lengths |= found
        if lengths == set(range(1, 13)):
            break
    assert lengths == set(range(1, 13)), f"the text lacks words of {set(range(1, 13)) - lengths}"
    return chosen


def bert2d_reference_ids(tokens: List[str], max_intermediate: int) -> List[List[int]]:
    """The published BERT2D's word and subword ids of one sequence of WordPiece tokens, written
    from their definition (not from the plugin's code): a word starts at every token without
    `##`; [CLS] is word 0; with two [SEP], the words after the first restart at 0; [PAD] 0.
    Subword ids: specials 0; one piece 0; else first 0, last 1, middle j of n: 2 + j when
    n <= M, else 2 + round_half_up(j * (M - 1) / n)."""
    specials = ("[CLS]", "[SEP]", "[PAD]")
    restart = tokens.count("[SEP]") >= 2
    word_ids, current, restarted = [], -1, False
    for token in tokens:
        if token == "[PAD]":
            word_ids.append(0)
        elif token == "[SEP]" and restart and not restarted:
            current += 1
            word_ids.append(current)
            current, restarted = -1, True
        elif not token.startswith("##") or current < 0:
            current += 1
            word_ids.append(current)
        else:
            word_ids.append(current)
    subword_ids: List[int] = []
    word: List[str] = []

    def close() -> None:
        n = len(word) - 2
        if len(word) == 1:
            subword_ids.append(0)
        elif word:
            middle = [
                2 + j if n <= max_intermediate else 2 + int(j * (max_intermediate - 1) / n + 0.5)
                for j in range(n)
            ]
            subword_ids.extend([0] + middle + [1])
        word.clear()

    for token in tokens:
        if token in specials:
            close()
            subword_ids.append(0)
        elif not token.startswith("##"):
            close()
            word.append(token)
        else:
            word.append(token)
    close()
    return [word_ids, subword_ids]


def turkish_lines(count: int = 4000) -> List[str]:
    return TURKISH_TEXT.read_text(encoding="utf-8").splitlines()[:count]


def build_tiny_models(root: Path) -> None:
    """root/hf/NAME: a tiny random model of every supported class; root/imported/NAME: its
    import."""
    from fairseq_struct.hf_import.importer import import_model

    lines = turkish_lines()
    cased = wordpiece_tokenizer(lines, root / "vocab-cased", lowercase=False)
    uncased = wordpiece_tokenizer(lines, root / "vocab-uncased", lowercase=True)
    pieces = sentencepiece_tokenizer(lines, root / "vocab-sentencepiece")
    save_bert(root / "hf" / "bert-pretraining", cased, "BertForPreTraining", seed=1)
    save_bert(root / "hf" / "bert-masked-lm", uncased, "BertForMaskedLM", seed=2)
    save_bert(root / "hf" / "bert-model", cased, "BertModel", seed=3, layer_norm_eps=1e-7)
    save_xlmr(root / "hf" / "xlmr", pieces, seed=4)
    for m in BERT2D_M:
        save_bert2d(root / "hf" / f"bert2d-m{m}", cased, subword_rows=m + 2, seed=10 + m)
    for model in sorted((root / "hf").iterdir()):
        import_model(str(model), root / "imported" / model.name)


def conllu_sentences(path: Path, first: int, count: int) -> List[Tuple[List[str], List[str]]]:
    """(words, UPOS tags) of `count` sentences of a CoNLL-U file from sentence `first` on."""
    blocks = path.read_text(encoding="utf-8").strip().split("\n\n")[first : first + count]
    sentences = []
    for block in blocks:
        rows = [line.split("\t") for line in block.splitlines() if line[:1].isdigit()]
        rows = [row for row in rows if row[0].isdigit()]  # multiword ranges carry no tag
        sentences.append(([row[1] for row in rows], [row[3] for row in rows]))
    return sentences


def save_bert_pretrained_on_tags(
    out: Path, tokenizer, sentences: List[Tuple[List[str], List[str]]], steps: int, seed: int = 0
) -> None:
    """A tiny BERT that knows some Turkish, as a published one does: trained in transformers as a
    `BertForTokenClassification` (tag on each word's first piece) and saved as its `BertModel`.
    Labelled pretraining stands in for masked-LM pretraining, which at this size and in seconds
    of CPU teaches a model too little to measure after fine-tuning."""
    from transformers import BertConfig, BertForTokenClassification

    tags = sorted({tag for _, sentence_tags in sentences for tag in sentence_tags})
    encoded = tokenizer(
        [words for words, _ in sentences], is_split_into_words=True, truncation=True, max_length=128
    )
    labels = []
    for index, (_, sentence_tags) in enumerate(sentences):
        word_ids = encoded.word_ids(index)
        labels.append(
            [
                -100 if word is None or word == previous else tags.index(sentence_tags[word])
                for previous, word in zip([None] + word_ids[:-1], word_ids)
            ]
        )
    config = BertConfig(
        vocab_size=len(tokenizer.get_vocab()),
        max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id,
        num_labels=len(tags),
        **{**DIMENSIONS, "hidden_size": 64, "intermediate_size": 128},
    )
    torch.manual_seed(seed)
    model = BertForTokenClassification(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        chosen = torch.randint(len(labels), (32,), generator=generator).tolist()
        length = max(len(labels[i]) for i in chosen)
        pad = tokenizer.pad_token_id
        ids = [encoded["input_ids"][i] + [pad] * (length - len(labels[i])) for i in chosen]
        targets = [labels[i] + [-100] * (length - len(labels[i])) for i in chosen]
        ids_tensor = torch.tensor(ids)
        model(
            input_ids=ids_tensor,
            attention_mask=(ids_tensor != pad).long(),
            labels=torch.tensor(targets),
        ).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.bert.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
