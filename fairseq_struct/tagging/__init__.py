"""Tagging schemes shared by the token-classification heads, their criterion and the
fine-tuning data tools (`iob`: IOB/IOBES tags, entity spans, Entity-Fix decoding); below both
`modules/` and `downstream/`, so that neither imports the other back."""
