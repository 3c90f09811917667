"""Export of trained checkpoints to other toolkits; the plugin itself never imports it.
`python -m fairseq_struct.export.hf` writes a Hugging Face `transformers` model directory
(docs/export.md)."""
