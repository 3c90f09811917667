"""The `fairseq-train` options that rebuild a pretrained encoder, read from its checkpoint.

    fairseq-struct encoder-options checkpoints/bert2d/checkpoint_best.pt
    --arch bert2d_tiny --encoder-layers 2 --encoder-embed-dim 128 ... --relative-positions 16

`--restore-file` loads weights into the model the command line builds, so fine-tuning
(`scripts/finetune.sh`) must repeat every structure option of pretraining: a forgotten option
without weights (`--subword-id-strategy`) would silently build another model.
"""

import argparse
import shlex
import sys
from typing import Any, Dict, List, Optional, Sequence

# Options of the encoder (dimensions, structure, regularisation) that fine-tuning must repeat.
ENCODER_OPTIONS = (
    "encoder_layers",
    "encoder_embed_dim",
    "encoder_ffn_embed_dim",
    "encoder_attention_heads",
    "max_positions",
    "activation_fn",
    "dropout",
    "attention_dropout",
    "activation_dropout",
    "pooler_activation_fn",
    "untie_weights_roberta",
    "encoder_normalize_before",
    "position_embedding",
    "max_word_positions",
    "max_intermediate_subwords",
    "subword_id_strategy",
    "num_segments",
    "relative_positions",
    "whole_word_attention",
    "wwa_window",
    "restart_word_positions",
    "layer_norm_eps",
    "sentence_head_from_pooler",
    "char_embed_dim",
    "char_filters",
    "max_word_chars",
    "output_vocab_size",
)


def model_config(checkpoint: Dict[str, Any]) -> Dict[str, Any]:
    config = checkpoint.get("cfg", {}).get("model") if checkpoint.get("cfg") else None
    if config is None:
        config = checkpoint.get("args")
    if config is None:
        raise ValueError("the checkpoint holds no model configuration (cfg.model or args)")
    return dict(vars(config)) if isinstance(config, argparse.Namespace) else dict(config)


def encoder_arguments(config: Dict[str, Any]) -> List[str]:
    arch = config.get("arch") or config.get("_name")
    if not arch:
        raise ValueError("the checkpoint's model configuration names no --arch")
    arguments = ["--arch", str(arch)]
    for name in ENCODER_OPTIONS:
        if name not in config or config[name] is None:
            continue
        flag = "--" + name.replace("_", "-")
        value = config[name]
        if isinstance(value, bool):
            if value:
                arguments.append(flag)
        else:
            arguments.extend([flag, str(value)])
    return arguments


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "checkpoint",
        help="a pretraining checkpoint of the project, or a directory of an imported model",
    )
    args = parser.parse_args(argv)
    from fairseq_struct.hf_import.directory import imported_checkpoint
    from fairseq_struct.model_checkpoint import read_state

    try:  # the checkpoint is mapped: its options are read, its tensors never
        arguments = encoder_arguments(
            model_config(read_state(str(imported_checkpoint(args.checkpoint))))
        )
    except (OSError, ValueError) as error:
        print(f"error: {args.checkpoint}: {error}", file=sys.stderr)
        return 1
    print(shlex.join(arguments))
    return 0


if __name__ == "__main__":
    sys.exit(main())
