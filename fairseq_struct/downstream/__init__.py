"""Downstream fine-tuning: data preparation, tagging schemes, prediction."""
