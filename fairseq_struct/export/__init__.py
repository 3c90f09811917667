"""Export of trained checkpoints to other toolkits; the plugin itself never imports it.

- `hf`: a Hugging Face `transformers` model directory (`python -m fairseq_struct.export.hf`),
  with the modeling and tokenizer code it needs in `hf_code/` (torch and transformers only).
  Its pieces: `hf_checkpoint` (what a checkpoint holds, what the export can compute),
  `hf_config`, `hf_weights` and `hf_model` (the transformers model), `hf_parity` (fairseq and
  the exported model on one batch).
"""
