"""The papers' public corpora: the catalogue, resumable downloads, cleaning and splitting."""
