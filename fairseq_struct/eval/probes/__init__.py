"""Qualitative probes of a pretrained masked-LM encoder (Polatbilek's thesis, 4.4.1 and 5.1.1).

    python -m fairseq_struct.eval.probes checkpoints-bert_elmo/checkpoint_best.pt \\
        --data data-bin/tr-mlm-words --probes fairseq_struct/eval/probes_tr.txt \\
        [--layer -1] [--json probes.json]

works for `roberta`, `bert2d` and `bert_elmo` checkpoints alike. --data is the pretraining data
directory (dict.txt, text/prepare_report.json, spm.model for pieces): each context is cut into
exactly the units the pretraining run cut its text into (`morph.units`) and fed as
`<s> context </s>` (the thesis fed `context ||| wwgg`; --second-segment gives that shape).
Three kinds of probe: analogy by vector arithmetic among a context's words, contextuality (a
word in different senses) and the out-of-vocabulary "wug" test.

The package, by concern (this module re-exports their public names):
- `words`: the words of a context (Turkish case folding, word spans, replacing a word);
- `format`: the probe file (format, reader, the probes, where each probed word sits);
- `statistics`: cosine similarity, the analogy query and answer, the answer's p-value;
- `runner`: a checkpoint as contextual word vectors, and the results of every probe;
- `report`: the results as text tables;
- `cli`: the command (`main`), run by `python -m fairseq_struct.eval.probes` and the
  `fairseq-struct-probes` console script.
The probe files themselves stay beside the package: eval/probes_tr.txt (the thesis's probes)
and eval/probes_demo_tr.txt (the demo grammar's words).
"""

from fairseq_struct.eval.probes.cli import main, parse_args
from fairseq_struct.eval.probes.format import (
    DEFAULT_REPLACEMENT,
    PROBE_KINDS,
    AnalogyProbe,
    ContextualityProbe,
    Probe,
    ProbeError,
    QueryWord,
    WordAt,
    WugProbe,
    analogy_query_words,
    check_words,
    contextuality_words,
    parse_probes,
    probed_words,
    read_probes,
    wug_words,
)
from fairseq_struct.eval.probes.report import tables
from fairseq_struct.eval.probes.runner import (
    ContextEncoder,
    EncodedContext,
    load_encoder,
    run_analogy,
    run_contextuality,
    run_probes,
    run_wug,
)
from fairseq_struct.eval.probes.statistics import (
    P_VALUE_TEST,
    AnalogyAnswer,
    analogy_query,
    answer_analogy,
    cosine,
    outlier_p_value,
)
from fairseq_struct.eval.probes.words import (
    ContextWord,
    context_words,
    find_word,
    replace_word,
    same_word,
    turkish_lower,
)

__all__ = [
    "DEFAULT_REPLACEMENT",
    "P_VALUE_TEST",
    "PROBE_KINDS",
    "AnalogyAnswer",
    "AnalogyProbe",
    "ContextEncoder",
    "ContextWord",
    "ContextualityProbe",
    "EncodedContext",
    "Probe",
    "ProbeError",
    "QueryWord",
    "WordAt",
    "WugProbe",
    "analogy_query",
    "analogy_query_words",
    "answer_analogy",
    "check_words",
    "context_words",
    "contextuality_words",
    "cosine",
    "find_word",
    "load_encoder",
    "main",
    "outlier_p_value",
    "parse_args",
    "parse_probes",
    "probed_words",
    "read_probes",
    "replace_word",
    "run_analogy",
    "run_contextuality",
    "run_probes",
    "run_wug",
    "same_word",
    "tables",
    "turkish_lower",
    "wug_words",
]
