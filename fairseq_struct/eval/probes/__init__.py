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

The package, by concern (this module gives the command, light to import; the model code loads
when it runs):
- `words`: the words of a context (Turkish case folding, word spans, replacing a word);
- `format`: the probe file (format, reader, the probes, where each probed word sits);
- `statistics`: cosine similarity, the analogy query and answer, the answer's p-value;
- `runner`: a checkpoint as contextual word vectors, and the results of every probe;
- `report`: the results as text tables;
- `cli`: the command (`main`), run by `python -m fairseq_struct.eval.probes` and the
  front door (`fairseq-struct probes`).
The probe files themselves stay beside the package: eval/probes_tr.txt (the thesis's probes)
and eval/probes_demo_tr.txt (the demo grammar's words).
"""

from fairseq_struct.eval.probes.cli import main, parse_args

__all__ = ["main", "parse_args"]
