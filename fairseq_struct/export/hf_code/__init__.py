"""The code files that `fairseq_struct.export.hf` copies into every exported model directory.

transformers loads them with `trust_remote_code=True`, so they import only torch, transformers
(and sentencepiece) and each other; this `__init__` imports nothing. What they need of the plugin
is copied in, each copy under a `# Copied from fairseq_struct.<module>.<name>[ with A->B]` line
that tests/export/test_hf_code_copies.py checks against its source.
"""
