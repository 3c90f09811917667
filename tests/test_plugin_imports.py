"""What a `fairseq-train` worker loads when fairseq imports the plugin (`--user-dir`).

Training, validation and generation need the models, tasks and criterions only; the preparation
code (the Turkish segmenter with its Zemberek port and sqlite cache, SentencePiece training,
Morfessor, the corpus tools) must stay out of every worker, which imports the plugin afresh.
"""

from conftest import json_from_new_interpreter

LOADED_BY_A_TRAINING_PARSE = """
import json, sys
from fairseq import options
parser = options.get_training_parser()
options.parse_args_and_arch(parser, [
    "data-bin/none", "--user-dir", "fairseq_struct", "--task", "masked_lm_struct",
    "--arch", "bert2d_tiny", "--criterion", "masked_lm_struct",
])
print(json.dumps(sorted(sys.modules)))
"""

# Modules (and package prefixes) that only preparation and evaluation command lines need.
PREPARATION_ONLY = (
    "fairseq_struct.morph",  # segmenters, the Zemberek port, SentencePiece training, chunk store
    "fairseq_struct.corpora",
    "fairseq_struct.demo_data",
    "fairseq_struct.masked_lm",  # the masked-LM preparation command line
    "fairseq_struct.testing",
    "fairseq_struct.export",  # the Hugging Face export and the optional transformers
    "transformers",
    "sqlite3",
    "zemberek",
    "sentencepiece",
    "morfessor",
)


def loaded_modules() -> list:
    return json_from_new_interpreter(LOADED_BY_A_TRAINING_PARSE)


def test_a_training_worker_loads_no_preparation_code():
    modules = loaded_modules()
    unwanted = [
        name
        for name in modules
        if any(name == prefix or name.startswith(prefix + ".") for prefix in PREPARATION_ONLY)
    ]
    assert unwanted == []
    # The parse did load the plugin: its repairs, components and shared word-boundary code.
    for expected in (
        "fairseq_struct.fixes.last_partial_batch",
        "fairseq_struct.models.bert2d",
        "fairseq_struct.tasks.masked_lm_struct",
        "fairseq_struct.pieces.word_boundaries",
    ):
        assert expected in modules
