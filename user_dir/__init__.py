"""Stable `--user-dir user_dir` entry for a checkout: registers everything in fairseq_struct."""

import fairseq_struct  # noqa: F401  (importing registers the models, tasks and criterions)
