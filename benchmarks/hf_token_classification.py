"""The transformers side of bench_finetune_vs_transformers.py: POS tagging with transformers' own
`BertForTokenClassification`, as a user of transformers writes it (no fairseq, no project code).

    python benchmarks/hf_token_classification.py train MODEL_DIR --train T.conllu \\
        --valid V.conllu --plan plan.json --out-dir FINE_TUNED
    python benchmarks/hf_token_classification.py predict FINE_TUNED --input test.conllu \\
        --out-dir OUT

`train` fine-tunes with the plugin's recipe (AdamW betas (0.9, 0.98), eps 1e-6, decoupled weight
decay 0.01 on every weight, linear warm-up then linear decay to 0, the loss the mean over the
words, each word's label on its first piece) on the batches the plan lists (example indices of
the training file, epoch by epoch, in update order: the plugin's own batches), prints one JSON
line per update to stdout, validates at each epoch's end and at the last update (word accuracy),
and keeps the best model (`save_pretrained`, ties to the later one, as fairseq's
checkpoint_best.pt). `predict` tags a CoNLL-U file in batches of sentences of similar length and
writes predictions.conllu and scores.json (word accuracy), as `fairseq-struct predict` does.
"""

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import torch
from transformers import (
    BertForTokenClassification,
    BertTokenizerFast,
    get_linear_schedule_with_warmup,
)

# UD's 17 universal POS tags, in the order of the plugin's label dictionary (sorted).
UPOS = sorted(
    "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()
)
IGNORED = -100  # transformers' CrossEntropyLoss skips it: the pieces after a word's first


def read_conllu(path: Path) -> List[Tuple[List[str], List[str]]]:
    """(words, UPOS tags) of each sentence: syntactic words, multi-word token ranges (3-4) and
    empty nodes (5.1) left out, as UD's own readers do."""
    sentences, words, tags = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if words:
                sentences.append((words, tags))
            words, tags = [], []
        elif not line.startswith("#"):
            columns = line.split("\t")
            if columns[0].isdigit():
                words.append(columns[1])
                tags.append(columns[3])
    if words:
        sentences.append((words, tags))
    return sentences


def encode(
    tokenizer,
    sentences: Sequence[Tuple[List[str], List[str]]],
    label_ids: Dict[str, int],
    max_length: int,
) -> List[Dict[str, List[int]]]:
    """Piece ids of each sentence ([CLS] ... [SEP], at most `max_length`), and its labels: each
    word's tag on its first piece, IGNORED elsewhere."""
    encoded = tokenizer(
        [words for words, _ in sentences],
        is_split_into_words=True,
        truncation=True,
        max_length=max_length,
    )
    examples = []
    for index, (_, tags) in enumerate(sentences):
        labels, previous = [], None
        for word in encoded.word_ids(index):
            first = word is not None and word != previous
            labels.append(label_ids.get(tags[word], IGNORED) if first else IGNORED)
            previous = word
        examples.append({"input_ids": encoded["input_ids"][index], "labels": labels})
    return examples


def collate(examples: Sequence[Dict[str, List[int]]], pad: int, device) -> Dict[str, torch.Tensor]:
    """Right-padded to the batch's longest example."""
    width = max(len(example["input_ids"]) for example in examples)
    ids = torch.full((len(examples), width), pad, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORED, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, example in enumerate(examples):
        length = len(example["input_ids"])
        ids[row, :length] = torch.tensor(example["input_ids"])
        labels[row, :length] = torch.tensor(example["labels"])
        mask[row, :length] = 1
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    return {name: tensor.to(device) for name, tensor in batch.items()}


def length_batches(examples: Sequence[Dict[str, List[int]]], size: int):
    """Indices in batches of `size` examples of similar length (prediction and validation)."""
    order = sorted(range(len(examples)), key=lambda index: len(examples[index]["input_ids"]))
    for begin in range(0, len(order), size):
        yield order[begin : begin + size]


@torch.no_grad()
def tag(model, examples, pad: int, batch_size: int, device) -> List[List[int]]:
    """Predicted label ids on each example's first pieces."""
    model.eval()
    predicted: List[List[int]] = [[] for _ in examples]
    for indices in length_batches(examples, batch_size):
        batch = collate([examples[index] for index in indices], pad, device)
        best = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        best = best.logits.argmax(-1).tolist()
        for row, index in enumerate(indices):
            labels = examples[index]["labels"]
            predicted[index] = [best[row][i] for i, label in enumerate(labels) if label != IGNORED]
    return predicted


def word_accuracy(examples, predicted: List[List[int]]) -> Tuple[int, int]:
    correct = words = 0
    for example, tags in zip(examples, predicted):
        gold = [label for label in example["labels"] if label != IGNORED]
        words += len(gold)
        correct += sum(p == g for p, g in zip(tags, gold))
    return correct, words


def train(args: argparse.Namespace) -> int:
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    tokenizer = BertTokenizerFast.from_pretrained(args.model)
    model = BertForTokenClassification.from_pretrained(
        args.model,
        num_labels=len(UPOS),
        id2label=dict(enumerate(UPOS)),
        label2id={tag: i for i, tag in enumerate(UPOS)},
    ).to(device)
    label_ids = {tag: i for i, tag in enumerate(UPOS)}
    longest = model.config.max_position_embeddings
    examples = encode(tokenizer, read_conllu(args.train), label_ids, longest)
    valid = read_conllu(args.valid)[: args.valid_sentences or None]
    valid = encode(tokenizer, valid, label_ids, longest)
    plan = json.loads(args.plan.read_text(encoding="utf-8"))
    pad = tokenizer.pad_token_id

    # Decoupled weight decay on every weight, as fairseq's Adam (no exclusion of biases and
    # LayerNorm weights, which transformers' Trainer would make). --fused: the kernel that
    # Trainer's default optimizer (adamw_torch_fused, torch >= 2.8) runs.
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=args.lr,
        betas=(0.9, 0.98),
        eps=1e-6,
        weight_decay=0.01,
        fused=args.fused or None,
    )
    total, warmup = plan["total_updates"], plan["warmup_updates"]
    scheduler = get_linear_schedule_with_warmup(optimizer, warmup, total)

    best = None
    updates = 0
    for epoch, batches in enumerate(plan["epochs"], start=1):
        model.train()
        for indices in batches:
            batch = collate([examples[index] for index in indices], pad, device)
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            updates += 1
            mask = batch["attention_mask"]
            record = {
                "update": updates,
                "epoch": epoch,
                "loss": round(loss.item(), 4),
                "lr": scheduler.get_last_lr()[0],  # the next update's, as fairseq logs it
                "sentences": int(mask.size(0)),
                "tokens": int(mask.sum()),
                "padded_tokens": int(mask.numel()),
            }
            print(json.dumps(record), flush=True)
            if updates == total:
                break
        # fairseq validates at each epoch's end and at the last update, and saves the best.
        correct, words = word_accuracy(valid, tag(model, valid, pad, args.batch_size, device))
        accuracy = 100 * correct / max(words, 1)
        saved = best is None or accuracy >= best
        if saved:
            best = accuracy
            model.save_pretrained(args.out_dir)
            tokenizer.save_pretrained(args.out_dir)
        print(json.dumps({"validation": epoch, "accuracy": accuracy, "saved": saved}), flush=True)
        if updates == total:
            break
    return 0


def predict(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    device = torch.device(args.device)
    tokenizer = BertTokenizerFast.from_pretrained(args.model)
    model = BertForTokenClassification.from_pretrained(args.model).to(device)
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    sentences = read_conllu(args.input)
    label_ids = {tag: i for i, tag in enumerate(labels)}
    examples = encode(tokenizer, sentences, label_ids, model.config.max_position_embeddings)
    # A gold tag the model lacks is still a word to score: give it a label no prediction takes.
    for example, (_, tags) in zip(examples, sentences):
        firsts = [i for i, label in enumerate(example["labels"]) if label != IGNORED]
        for position, gold in zip(firsts, tags):
            example["labels"][position] = labels.index(gold) if gold in labels else len(labels)
    predicted = tag(model, examples, tokenizer.pad_token_id, args.batch_size, device)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    tags = iter(labels[i] for sentence in predicted for i in sentence)
    with open(args.out_dir / "predictions.conllu", "w", encoding="utf-8") as out:
        for line in args.input.read_text(encoding="utf-8").splitlines():
            columns = line.split("\t")
            if len(columns) > 3 and columns[0].isdigit():
                columns[3] = next(tags, "X")
            out.write("\t".join(columns) + "\n")
    correct, words = word_accuracy(examples, predicted)
    scores = {
        "accuracy": round(100 * correct / max(words, 1), 2),
        "words": sum(len(words) for words, _ in sentences),
        "seconds": round(time.perf_counter() - started, 3),
    }
    (args.out_dir / "scores.json").write_text(json.dumps(scores) + "\n", encoding="utf-8")
    print(json.dumps(scores), flush=True)
    return 0


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fit = commands.add_parser("train", help="fine-tune on the plan's batches")
    fit.add_argument("model", help="a BERT saved with save_pretrained, with its tokenizer")
    fit.add_argument("--train", type=Path, required=True, help="CoNLL-U training file")
    fit.add_argument("--valid", type=Path, required=True, help="CoNLL-U validation file")
    fit.add_argument("--valid-sentences", type=int, default=0, help="its first N (0: all)")
    fit.add_argument("--plan", type=Path, required=True, help="the batches (JSON)")
    fit.add_argument("--out-dir", type=Path, required=True, help="the best model goes here")
    fit.add_argument("--lr", type=float, default=5e-5)
    fit.add_argument("--seed", type=int, default=1)
    fit.add_argument("--batch-size", type=int, default=16, help="validation sentences a batch")
    fit.add_argument("--device", default="cpu")
    fit.add_argument(
        "--fused",
        action="store_true",
        help="torch's fused AdamW kernel (transformers' Trainer default, adamw_torch_fused); "
        "default: torch.optim.AdamW's own choice (on a CPU one tensor at a time)",
    )
    tagger = commands.add_parser("predict", help="tag and score a CoNLL-U file")
    tagger.add_argument("model", help="a fine-tuned BertForTokenClassification")
    tagger.add_argument("--input", type=Path, required=True)
    tagger.add_argument("--out-dir", type=Path, required=True)
    tagger.add_argument("--batch-size", type=int, default=32)
    tagger.add_argument("--device", default="cpu")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    return train(args) if args.command == "train" else predict(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
