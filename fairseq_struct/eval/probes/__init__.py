"""Qualitative probes of a pretrained masked-LM encoder (Polatbilek's thesis, 4.4.1 and 5.1.1):
analogy among a context's words, contextuality and the out-of-vocabulary "wug" test.

The command is `cli.main` (`fairseq-struct probes`); the probe files are eval/probes_tr.txt (the
thesis's) and eval/probes_demo_tr.txt (the demo grammar's words), in the format of `format.py`.
"""

from fairseq_struct.eval.probes.cli import main, parse_args

__all__ = ["main", "parse_args"]
