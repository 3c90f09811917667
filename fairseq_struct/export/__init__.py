"""Export of trained checkpoints to other toolkits; the plugin itself never imports it.
`fairseq-struct export-hf` writes a Hugging Face `transformers` model directory
(docs/export.md)."""
