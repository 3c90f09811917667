"""The work of `downstream.predict` (the command and its options are there): load a fine-tuned
checkpoint, run it on a data set cut into its units, and score the predictions."""

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from fairseq.data import data_utils
from tabulate import tabulate

from fairseq_struct.downstream import readers, writers
from fairseq_struct.downstream.features import (
    CutCounts,
    question_windows,
    sentence_item,
    token_windows,
)
from fairseq_struct.downstream.qa_answers import best_answers, window_answers
from fairseq_struct.eval.squad_metrics import squad_scores
from fairseq_struct.modules.token_classification_heads import gather_words
from fairseq_struct.pieces.word_boundaries import word_start_lookup
from fairseq_struct.tagging.iob import entity_fix, to_iob2

SENTENCE_HEAD = "sentence_classification_head"


def load(checkpoint: Path, data: Optional[str]) -> Tuple[Any, Any, Dict[str, Any]]:
    """The fine-tuned model (eval mode), its task and the data directory's finetune.json. The
    checkpoint's optimizer state is never read (`model_checkpoint.load_model`)."""
    from fairseq_struct.model_checkpoint import load_model

    overrides = {"data": data} if data else {}
    model, cfg, task = load_model(str(checkpoint), overrides)
    report_path = Path(cfg.task.data) / "finetune.json"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return model.eval(), task, report


def add_unseen_words(model: Any, dictionary: Any, texts: Sequence[Sequence[Sequence[str]]]) -> int:
    """Words mode (BERT-ELMo): give every word of the input an id of its own, so that it is
    embedded from its characters instead of as <unk>; returns how many were added."""
    added = 0
    for text in texts:
        for word in text:
            for unit in word:
                if dictionary.index(unit) == dictionary.unk():
                    dictionary.add_symbol(unit, n=0)
                    added += 1
    if added:
        encoder = model.encoder.sentence_encoder
        encoder.embed_tokens.set_symbols(dictionary.symbols)
        # Every token is a word, the appended ones too: the word-structure lookup grows with them.
        lookup = word_start_lookup(dictionary, tokens_are_words=True)
        encoder.word_start_lookup = lookup.to(encoder.word_start_lookup.device)
    return added


def batches(items: Sequence[List[int]], size: int):
    """(indices, items) in batches of similar length."""
    order = sorted(range(len(items)), key=lambda index: len(items[index]))
    for begin in range(0, len(order), size):
        chosen = order[begin : begin + size]
        yield chosen, [items[index] for index in chosen]


def padded(items: Sequence[List[int]], pad: int) -> torch.Tensor:
    return data_utils.collate_tokens([torch.tensor(item) for item in items], pad)


@torch.no_grad()
def features(model: Any, tokens: torch.Tensor, head: str) -> torch.Tensor:
    outputs, _ = model(tokens, features_only=True, classification_head_name=head)
    return outputs


# ------------------------------------------------------------------------------ tasks


def predict_sentiment(model, task, cutter, report, args) -> Dict[str, Any]:
    examples, _ = readers.read_classification(
        args.input, labels=args.labels, tab_separated=args.tsv
    )
    dictionary = task.source_dictionary
    counts = CutCounts()
    units = cutter.cut([example.text.split() for example in examples])
    if report["tokens_are_words"]:
        add_unseen_words(model, dictionary, units)
    items = [
        [dictionary.bos()] + sentence_item(words, dictionary, report["max_positions"], counts)
        for words in units
    ]
    labels = task.label_dictionary
    classes = model.classification_heads[SENTENCE_HEAD].out_proj.out_features
    # The label dictionary also holds the <mask> that fairseq's task appends: not a class.
    names = labels.symbols[labels.nspecial : labels.nspecial + classes]
    predicted: List[str] = [""] * len(items)
    for indices, batch in batches(items, args.batch_size):
        logits = features(model, padded(batch, dictionary.pad()), SENTENCE_HEAD)
        for index, best in zip(indices, logits.argmax(dim=-1).tolist()):
            predicted[index] = names[best]
    writers.write_labels(predicted, args.out_dir / "predictions.txt")
    return classification_scores([example.label for example in examples], predicted, names)


def classification_scores(gold: List[str], predicted: List[str], names: List[str]):
    per_class = {}
    for name in names:
        tp = sum(1 for g, p in zip(gold, predicted) if g == p == name)
        fp = sum(1 for g, p in zip(gold, predicted) if p == name != g)
        fn = sum(1 for g, p in zip(gold, predicted) if g == name != p)
        f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
        per_class[name] = {"f1": round(100 * f1, 2), "support": tp + fn}
    accuracy = sum(1 for g, p in zip(gold, predicted) if g == p) / max(len(gold), 1)
    return {
        "accuracy": round(100 * accuracy, 2),
        "f1": round(sum(c["f1"] for c in per_class.values()) / max(len(per_class), 1), 2),
        "items": len(gold),
        "per_class": per_class,
    }


def predict_tags(model, task, cutter, report, args) -> Dict[str, Any]:
    ner = report["task"] == "ner"
    if ner:
        sentences, _ = readers.read_conll(args.input[0], tag_column=args.tag_column)
    else:
        sentences, _ = readers.read_conllu(args.input[0])
    dictionary = task.source_dictionary
    counts = CutCounts()
    units = cutter.cut([sentence.words for sentence in sentences])
    if report["tokens_are_words"]:
        add_unseen_words(model, dictionary, units)
    windows = [
        window
        for index, (sentence, words) in enumerate(zip(sentences, units))
        for window in token_windows(
            index, words, ["O"] * len(words), dictionary, report["max_positions"], counts
        )
    ]
    head_name = task.cfg.classification_head_name
    head = model.classification_heads[head_name]
    fix = task.cfg.entity_fix if args.entity_fix is None else args.entity_fix
    predicted: List[List[str]] = [[] for _ in sentences]
    window_tags: Dict[int, List[str]] = {}
    for indices, batch in batches([window.tokens for window in windows], args.batch_size):
        tokens = padded(batch, dictionary.pad())
        word_mask = torch.zeros_like(tokens, dtype=torch.bool)
        for row, index in enumerate(indices):
            labelled = [label != "<pad>" for label in windows[index].labels]
            word_mask[row, : len(labelled)] = torch.tensor(labelled)
        words, mask = gather_words(features(model, tokens, head_name), word_mask)
        for index, tags in zip(indices, head.decode(words, mask)):
            window_tags[index] = tags
    for index, window in enumerate(windows):
        predicted[window.sentence].extend(window_tags[index])
    if fix:
        predicted = [entity_fix(tags) for tags in predicted]
    if ner:
        gold = [to_iob2(sentence.tags) for sentence in sentences]  # as the training tags were
        writers.write_conll_predictions(sentences, predicted, args.out_dir / "predictions.conll")
        return entity_scores(gold, predicted)
    writers.write_conllu_predictions(sentences, predicted, args.out_dir / "predictions.conllu")
    gold = [list(sentence.tags) for sentence in sentences]
    words = sum(len(tags) for tags in gold)
    correct = sum(p == g for ref, pred in zip(gold, predicted) for p, g in zip(pred, ref))
    return {"accuracy": round(100 * correct / max(words, 1), 2), "words": words}


def entity_scores(gold: List[List[str]], predicted: List[List[str]]) -> Dict[str, Any]:
    """seqeval's entity scores: its default (conlleval) mode, which papers report, and the
    strict IOB2 F1 (the two differ only where a prediction is not valid IOB2)."""
    from seqeval.metrics import classification_report, f1_score
    from seqeval.scheme import IOB2

    report = classification_report(gold, predicted, output_dict=True, zero_division=0)
    total = report["micro avg"]
    per_type = {
        kind: {"f1": round(100 * v["f1-score"], 2), "support": int(v["support"])}
        for kind, v in report.items()
        if kind not in ("micro avg", "macro avg", "weighted avg")
    }
    strict = f1_score(gold, predicted, mode="strict", scheme=IOB2, zero_division=0)
    return {
        "precision": round(100 * total["precision"], 2),
        "recall": round(100 * total["recall"], 2),
        "f1": round(100 * total["f1-score"], 2),
        "f1_strict_iob2": round(100 * strict, 2),
        "entities": int(total["support"]),
        "per_type": per_type,
    }


def predict_qa(model, task, cutter, report, args) -> Dict[str, Any]:
    examples, _ = readers.read_squad(args.input[0], keep_unanswered=True)
    dictionary = task.source_dictionary
    if report["tokens_are_words"]:
        questions = [example.question.split() for example in examples]
        paragraphs = [text.split() for text in sorted({example.context for example in examples})]
        add_unseen_words(model, dictionary, cutter.cut(questions + paragraphs))
    cut = question_windows(
        examples,
        cutter,
        dictionary,
        report["max_length"],
        report["doc_stride"],
        report["max_query_length"],
        CutCounts(),
    )
    windows = [window.tokens for window in cut.windows]
    metadata = [
        {
            "question": window.question_id,
            "context": cut.contexts[window.context],
            "context_offset": window.context_offset,
            "spans": window.unit_spans,
        }
        for window in cut.windows
    ]
    answers = []
    head = task.cfg.classification_head_name
    for indices, batch in batches(windows, args.batch_size):
        tokens = padded(batch, dictionary.pad())
        start_logits, end_logits = features(model, tokens, head).float().unbind(dim=-1)
        answers.extend(
            window_answers(
                tokens,
                start_logits,
                end_logits,
                [metadata[index] for index in indices],
                task.cfg.max_answer_length,
            )
        )
    predictions = best_answers(answers)
    writers.write_squad_predictions(predictions, args.out_dir / "predictions.json")
    gold = {str(e.id): [a.text for a in e.answers] for e in examples}
    scores = squad_scores(predictions, gold)
    return {key: round(value, 2) for key, value in scores.items()}


PREDICTORS = {"sentiment": predict_sentiment, "ner": predict_tags, "pos": predict_tags}


def table(scores: Dict[str, Any]) -> str:
    rows = [(key, value) for key, value in scores.items() if not isinstance(value, dict)]
    for group in ("per_type", "per_class"):
        for name, values in scores.get(group, {}).items():
            rows.append((f"{name} f1", f"{values['f1']} ({values['support']})"))
    return tabulate(rows, headers=["metric", "value"])
