"""Tagging schemes shared by the token-classification heads, their criterion and the fine-tuning
data tools; below both `modules/` and `downstream/`, so that neither imports the other back."""
