"""Import published Hugging Face encoders (BERT, BERT2D, XLM-R) as checkpoints of the plugin:
`python -m fairseq_struct.hf_import SOURCE OUT_DIR` (`cli`)."""
