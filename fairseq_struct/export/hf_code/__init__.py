"""The code files that `fairseq_struct.export.hf` copies into every exported model directory.

They are loaded by `transformers` with `trust_remote_code=True` from the export directory, so
they import torch, transformers (and sentencepiece for the tokenizer) only, never fairseq or
fairseq_struct, and import each other relatively. Nothing here is imported by the plugin:
this `__init__` imports nothing, so `import fairseq_struct` never imports transformers.

What they need of the plugin is copied into them, each copy marked, as transformers marks its
own, by a line above it: `# Copied from fairseq_struct.<module>.<name>[ with A->B]`;
tests/export/test_hf_code_copies.py checks that every copy still equals its source.
"""
