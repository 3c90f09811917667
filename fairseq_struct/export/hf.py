"""Export a checkpoint of the project to a Hugging Face `transformers` model directory.

    pip install 'fairseq-struct[hf]'        # transformers and safetensors (optional extras)
    python -m fairseq_struct.export.hf checkpoints/bert2d/checkpoint_best.pt hf/bert2d

    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained("hf/bert2d", trust_remote_code=True)
    model = AutoModelForMaskedLM.from_pretrained("hf/bert2d", trust_remote_code=True).eval()
    batch = tokenizer(["ev￭ler￭de kal￭dı ."], return_tensors="pt")  # morph mode: segmented text
    logits = model(**batch).logits              # (1, tokens, dictionary)
    encoder = AutoModel.from_pretrained("hf/bert2d", trust_remote_code=True)  # encoder only

Checkpoints (the model and task come from the checkpoint, the dictionary from its data
directory, or from --data):
- masked-LM pretraining (`masked_lm_struct`, fairseq's `masked_lm`) of `bert2d*`, `bert_elmo*` and
  stock `roberta`: the encoder and the masked-LM head (`AutoModelForMaskedLM`; the NSP/SOP head
  "sentence_pair" is left out);
- `sentence_prediction` fine-tuning: the classification head (`AutoModelForSequenceClassification`);
- `token_classification` fine-tuning with `--head softmax|lcrf|lcrf_ner`
  (`AutoModelForTokenClassification`): logits are the per-token scores (the CRF's emissions),
  `model.crf` holds the transitions and `model.decode(...)` gives each word's label (Viterbi,
  and the Entity-Fix rule if fine-tuning used it).

OUT_DIR gets `config.json`, `model.safetensors`, the tokenizer (`vocab.json`: the fairseq
dictionary; `spm.model` for pieces; `tokenizer_config.json`), the code transformers loads with
`trust_remote_code=True` (`configuration_struct_encoder.py`, `modeling_struct_encoder.py`,
`tokenization_struct_encoder.py`; torch and transformers only, no fairseq) and
`fairseq_export.json` (where it came from, what was left out, the parity check).
Stock roberta whose options transformers' own `RobertaForMaskedLM` /
`RobertaForSequenceClassification` computes exactly is written as such (`model_type` "roberta");
everything else uses the exported code. A model on a Hugging Face tokenizer's units (an import,
or WordPiece pretraining) keeps that tokenizer and its ids (hf_tokenizer_units.py). Before writing, the export runs fairseq and the
transformers model on the same batch and stops if they differ (`--no-check` skips that).

An option the exported model cannot compute (quantization noise, spectral norm, sinusoidal
positions, the CSE head, ...) stops the export with an `UnsupportedCheckpoint` error naming it:
an export never computes something else than the checkpoint. Tokenizer limitations (morph-mode
text must be segmented first; word-level text Moses-tokenized) are in
`hf_code/tokenization_struct_encoder.py`.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a checkpoint of fairseq-train")
    parser.add_argument("out_dir", type=Path, help="the transformers model directory to write")
    parser.add_argument("--data", help="the run's data directory (default: the checkpoint's)")
    parser.add_argument(
        "--pretraining-data",
        type=Path,
        help="the scripts/prepare-mlm.sh directory of the pretraining run (spm.model, "
        "text/prepare_report.json); default: from the data directory",
    )
    parser.add_argument("--spm-model", type=Path, help="the run's SentencePiece model")
    parser.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="skip comparing fairseq's and the export's outputs before writing",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace files in OUT_DIR")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    # torch, fairseq and transformers load with the checkpoint, after the arguments.
    from fairseq_struct.export.hf_checkpoint import UnsupportedCheckpoint
    from fairseq_struct.export.hf_directory import MissingExtras, export, require_transformers
    from fairseq_struct.export.hf_parity import ExportMismatch

    try:
        require_transformers()  # before loading fairseq and the checkpoint
        report = export(
            args.checkpoint,
            args.out_dir,
            data=args.data,
            pretraining_data=args.pretraining_data,
            spm_model=args.spm_model,
            check=args.check,
            overwrite=args.overwrite,
        )
    except (
        MissingExtras,
        UnsupportedCheckpoint,
        ExportMismatch,
        FileNotFoundError,
        FileExistsError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2))
    print(f"transformers model in {args.out_dir} (load with trust_remote_code=True)")
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
