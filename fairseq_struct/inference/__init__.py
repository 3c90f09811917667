"""Using a trained translation model: the `fairseq-struct translate` and
`fairseq-struct average-checkpoints` commands (docs/translating.md)."""
