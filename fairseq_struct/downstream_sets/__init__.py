"""The downstream data sets of the encoder papers: catalogue, download and conversion."""
