"""Export of trained checkpoints to other toolkits; the plugin itself never imports it.

- `hf`: a Hugging Face `transformers` model directory (`python -m fairseq_struct.export.hf`),
  with the modeling and tokenizer code it needs in `hf_code/` (torch and transformers only).
"""
