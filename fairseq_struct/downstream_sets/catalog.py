"""The downstream data sets of the encoder papers: where each is published, its licence, the paper
tables it serves, and how `fetch` turns it into the files `downstream.prepare` reads.

    fairseq-struct datasets list
    fairseq-struct datasets fetch turkish-wiki-ner germeval2014 --out datasets/

A name is one converted directory; a paper's preprocessing that changes the data (the BERT2D
paper's balanced sentiment classes, LER's coarse classes) is a name of its own over the same
published files, so that grids and tables name exactly what they ran on.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

KAYA_TANTUG = "Kaya & Tantuğ, BERT2D"
POLATBILEK = "Polatbilek, BERT-ELMo thesis"
ZOELLNER = "Zöllner et al., small German BERTs"
# The converted file of a split, by task (sentiment: one file per class, `{split}.{class}`).
CONVERTED_EXTENSIONS = {"ner": "conll", "pos": "conllu", "qa": "json"}


@dataclass(frozen=True)
class SourceFile:
    """One published file: its download URL, its name in the source's folder and, where it is
    known from the published bytes, its sha256 (else recorded at the first download)."""

    url: str
    filename: str
    sha256: Optional[str] = None


@dataclass(frozen=True)
class UrlSource:
    """Files downloaded one by one over HTTP(S) into OUT/sources/KEY/."""

    key: str
    files: Tuple[SourceFile, ...]
    homepage: str


@dataclass(frozen=True)
class HubSource:
    """A Hugging Face hub dataset: its data files, fetched at `revision` into OUT/sources/KEY/
    and read with the `datasets` library."""

    key: str
    repo_id: str
    filenames: Tuple[str, ...]
    revision: str = "main"

    @property
    def homepage(self) -> str:
        return f"https://huggingface.co/datasets/{self.repo_id}"


Source = Union[UrlSource, HubSource]


@dataclass(frozen=True)
class DataSet:
    """One catalogue entry. `splits` maps the converted split (train, valid, test) to the source
    file it comes from; `expected` the published size of each source split, checked after
    reading (sentences, questions or rows: `unit`). `options` are the conversion's settings."""

    name: str
    task: str  # sentiment, ner, pos or qa: downstream.prepare's task
    title: str
    source: Source
    licence: str
    serves: Tuple[str, ...]  # the papers' tables that evaluate on it
    conversion: str  # a key of conversions.CONVERSIONS
    splits: Mapping[str, str]
    expected: Mapping[str, int]
    unit: str
    preprocessing: str = "as published"
    options: Mapping[str, object] = field(default_factory=dict)

    def converted_files(self, split: str) -> List[str]:
        """The names of the files `fetch` writes for `split` (none where it has no such split),
        known before fetching: the commands of a grid name them before its fetch step runs."""
        carved = split == "valid" and self.options.get("valid_fraction")
        if split not in self.splits and not carved:
            return []
        if self.task != "sentiment":
            return [f"{split}.{CONVERTED_EXTENSIONS[self.task]}"]
        dropped = set(self.options.get("drop", ()))
        labels: Mapping[str, str] = self.options["labels"]
        return sorted(f"{split}.{name}" for label, name in labels.items() if label not in dropped)


def _github(repository: str, revision: str, path: str, sha256: Optional[str] = None) -> SourceFile:
    url = f"https://raw.githubusercontent.com/{repository}/{revision}/{path}"
    return SourceFile(url, path.rsplit("/", 1)[-1], sha256)


# --------------------------------------------------------------------------- Turkish (BERT2D)

# winvoker's train.csv and test.csv: text,label,dataset with labels Positive, Negative, Notr.
_SENTIMENT_SOURCE = HubSource(
    "winvoker-turkish-sentiment",
    "winvoker/turkish-sentiment-analysis-dataset",
    ("train.csv", "test.csv"),
)
_SENTIMENT_LABELS = {"Positive": "positive", "Negative": "negative", "Notr": "neutral"}


def _sentiment(name: str, preprocessing: str, **options) -> DataSet:
    return DataSet(
        name=name,
        task="sentiment",
        title="Turkish sentiment (winvoker/turkish-sentiment-analysis-dataset: product and "
        "store reviews, HUMIR film reviews, tweets; wiki sentences as neutral)",
        source=_SENTIMENT_SOURCE,
        licence="CC BY-SA 4.0",
        serves=(f"{KAYA_TANTUG}, Table 3 (sentiment accuracy / F1)",),
        conversion="sentiment_csv",
        splits={"train": "train.csv", "test": "test.csv"},
        expected={"train": 440_679, "test": 48_965},
        unit="rows",
        preprocessing=preprocessing,
        options={"labels": _SENTIMENT_LABELS, "valid_fraction": 0.1, "seed": 1, **options},
    )


_WIKI_NER_REVISION = "34b6e73268e29605b0d9f4914226853e7c325a61"
_WIKI_NER = "turkish-nlp-suite/Turkish-Wiki-NER-Dataset"
_WIKI_NER_SHA256 = {
    "train": "9d2a0908be5882c7db199177131f77b74ad5a3e6f1cfdd99e20858b06658040f",
    "dev": "30b0a4c7742977f28f16a1409a0ae45a95b3100ba0b7986fb53ce0be04b37bf5",
    "test": "d1abd618f844b07e39963c6804c5e36707ebe3d37ff4a9040c3c08e36d99d795",
}

_UD_RELEASE = "r2.14"
_UD_SHA256 = {
    "tr_imst-ud-train.conllu": "be80b6e833f33c647fc2e920344044ea2f26ae424acd5beeea9ba259b2158b36",
    "tr_imst-ud-dev.conllu": "755b6f414506c05ba4c9ffb325f0bddd96c8cc1ffffdb68ef16efffe5466f097",
    "tr_imst-ud-test.conllu": "fc9269bd598489b942a025b678779557266ce0c054a843e47c7db386d76d6459",
    "tr_boun-ud-dev.conllu": "f6d1ed6e3b57b4e658177eb16089e9fb616bc68fb110eb0894c2b409e41b5c76",
    "tr_boun-ud-test.conllu": "4f74fc0f9efdd1285d781f3efd1e98cbf39cf4433df9eb4dc14162e8ed36773b",
}


def _ud(name: str, treebank: str, prefix: str, licence: str, table: str, sizes) -> DataSet:
    repository = f"UniversalDependencies/UD_Turkish-{treebank}"
    names = [f"{prefix}-ud-{split}.conllu" for split in ("train", "dev", "test")]
    files = tuple(_github(repository, _UD_RELEASE, name, _UD_SHA256.get(name)) for name in names)
    return DataSet(
        name=name,
        task="pos",
        title=f"UD Turkish {treebank} {_UD_RELEASE[1:]} (UPOS tagging)",
        source=UrlSource(
            f"ud-turkish-{treebank.lower()}-{_UD_RELEASE}",
            files,
            f"https://github.com/{repository}",
        ),
        licence=licence,
        serves=(f"{KAYA_TANTUG}, {table} (POS dev / test accuracy)",),
        conversion="conllu_copy",
        splits={
            split: f"{prefix}-ud-{source}.conllu"
            for split, source in (("train", "train"), ("valid", "dev"), ("test", "test"))
        },
        expected=dict(zip(("train", "valid", "test"), sizes)),
        unit="sentences",
    )


_TQUAD_REVISION = "5eb83db1012b9afe754fda5d08a350a76b2b70c7"  # the data files' only version

# --------------------------------------------------------------------------- German (Zöllner et al.)

# The GermEval 2014 files as flair and Hugging Face's germeval_14 download them (Google Drive).
# No checksum is pinned: the organisers changed the files on 2022-04-28 ("to fix an encoding
# error"), so the first download's sha256 is recorded instead.
_GERMEVAL_DRIVE = {
    "NER-de-train.tsv": "1Jjhbal535VVz2ap4v4r_rN1UEHTdLK5P",
    "NER-de-dev.tsv": "1ZfRcQThdtAR5PPRjIDtrVP7BtXSCUBbm",
    "NER-de-test.tsv": "1u9mb7kNJHWQCWyweMDRMuTFoOHOfeBTH",
}

_LER_REVISION = "f9c2b950898c56fdc328e553d5537c7611a0ffb1"
_LER_REPOSITORY = "elenanereiss/Legal-Entity-Recognition"
_LER_SHA256 = {
    "ler_dev.conll": "1cec4ad19b348a032b8ada0e65b206aad99be7d9b17e4f1fc9a9267a3eb72ab2",
    "ler_test.conll": "03ef541b11773469f9b2ab0620ce8ca0bf4f5d0847f0e29be1e62877043ee76c",
}
# Leitner et al.'s 19 fine classes under their 7 coarse ones (the data's README, the Hugging Face
# copy's loading script); B-/I- prefixes are kept.
LER_COARSE_CLASSES: Dict[str, str] = {
    fine: coarse
    for coarse, fines in {
        "PER": ("PER", "RR", "AN"),
        "LOC": ("LD", "ST", "STR", "LDS"),
        "ORG": ("ORG", "UN", "INN", "GRT", "MRK"),
        "NRM": ("GS", "VO", "EUN"),
        "REG": ("VS", "VT"),
        "RS": ("RS",),
        "LIT": ("LIT",),
    }.items()
    for fine in fines
}


def _ler(name: str, granularity: str, preprocessing: str) -> DataSet:
    return DataSet(
        name=name,
        task="ner",
        title=f"German Legal Entity Recognition (Leitner et al.), {granularity} classes",
        source=UrlSource(
            "legal-entity-recognition",
            tuple(
                _github(
                    _LER_REPOSITORY,
                    _LER_REVISION,
                    f"data/ler_{split}.conll",
                    _LER_SHA256.get(f"ler_{split}.conll"),
                )
                for split in ("train", "dev", "test")
            ),
            f"https://github.com/{_LER_REPOSITORY}",
        ),
        licence="CC BY 4.0 (the README's text and the papers; a CC BY-NC-SA 4.0 badge closes "
        "the same README)",
        serves=(
            f"{ZOELLNER}, Tables 6, 8 and 10 (LER {'CG' if granularity == 'coarse' else 'FG'}, "
            "entity F1; the authors' own split, not published: this is the publisher's split "
            "of 2022)",
        ),
        conversion="conll_ner",
        splits={"train": "ler_train.conll", "valid": "ler_dev.conll", "test": "ler_test.conll"},
        expected={"train": 53_384, "valid": 6_666, "test": 6_673},
        unit="sentences",
        preprocessing=preprocessing,
        options={"tag_map": LER_COARSE_CLASSES} if granularity == "coarse" else {},
    )


_NEISS_REVISION = "00d1b8589deac560fd0dc78c5394dc559a65889c"


def _neiss(name: str, folder: str, stem: str, licence: str, title: str, sizes) -> DataSet:
    files = tuple(
        _github("NEISSproject/NERDatasets", _NEISS_REVISION, f"{folder}/{split}_{stem}.conll")
        for split in ("train", "dev", "test")
    )
    return DataSet(
        name=name,
        task="ner",
        title=title,
        source=UrlSource(
            f"neiss-{stem}",
            files,
            f"https://github.com/NEISSproject/NERDatasets/tree/main/{folder}",
        ),
        licence=licence,
        serves=(f"{ZOELLNER}, Tables 1-2 (sizes), 6 and 8 ({folder}, entity F1)",),
        conversion="conll_ner",
        splits={
            "train": f"train_{stem}.conll",
            "valid": f"dev_{stem}.conll",
            "test": f"test_{stem}.conll",
        },
        expected=dict(zip(("train", "valid", "test"), sizes)),
        unit="sentences",
    )


def _registry() -> Dict[str, DataSet]:
    datasets: List[DataSet] = [
        _sentiment(
            "turkish-sentiment",
            "the BERT2D paper's: neutral rows dropped, a seeded tenth of the training rows "
            "set aside as validation, then the training negatives up-sampled at random (seed 1) "
            "to as many as the positives; the test split keeps its published distribution",
            drop=("Notr",),
            upsample=("train",),
        ),
        _sentiment(
            "turkish-sentiment-balanced-test",
            "as turkish-sentiment, and the test negatives up-sampled too (the BERT2D paper's "
            "data section says once that the test set was balanced, twice that it was not)",
            drop=("Notr",),
            upsample=("train", "test"),
        ),
        _sentiment(
            "turkish-sentiment-3class",
            "as published: positive, negative and neutral; a seeded tenth of the training rows "
            "as validation",
        ),
        DataSet(
            name="turkish-wiki-ner",
            task="ner",
            title="Turkish Wiki NER (turkish-nlp-suite; 19 entity types, IOB2)",
            source=UrlSource(
                "turkish-wiki-ner",
                tuple(
                    _github(
                        _WIKI_NER,
                        _WIKI_NER_REVISION,
                        f"Turkish-Wiki-NER-Dataset/{split}.conll",
                        sha256,
                    )
                    for split, sha256 in _WIKI_NER_SHA256.items()
                ),
                f"https://github.com/{_WIKI_NER}",
            ),
            licence="CC BY-SA 4.0",
            serves=(f"{KAYA_TANTUG}, Table 4 (NER dev / test F1)",),
            conversion="conll_ner",
            splits={"train": "train.conll", "valid": "dev.conll", "test": "test.conll"},
            # The README says 18,000 training sentences; the file holds 17,967.
            expected={"train": 17_967, "valid": 1_000, "test": 1_000},
            unit="sentences",
        ),
        _ud(
            "ud-turkish-imst",
            "IMST",
            "tr_imst",
            "CC BY-NC-SA 4.0 (README; its LICENSE.txt says BY-NC-SA 3.0): non-commercial",
            "Table 5",
            (3_435, 1_100, 1_100),
        ),
        _ud("ud-turkish-boun", "BOUN", "tr_boun", "CC BY-SA 4.0", "Table 6", (7_803, 979, 979)),
        DataSet(
            name="tquad",
            task="qa",
            title="TQuAD (Turkish and Islamic science history; SQuAD v1.1 JSON with "
            "answer_start as a string)",
            source=UrlSource(
                "tquad",
                tuple(
                    _github("TQuad/turkish-nlp-qa-dataset", _TQUAD_REVISION, name, sha256)
                    for name, sha256 in (
                        (
                            "train-v0.1.json",
                            "a1033c237665c680cdf1e2071b39c9c1ca3d4287e2de460530abe519c5f70ddc",
                        ),
                        (
                            "dev-v0.1.json",
                            "1a42c8b00222db18331cbaa5b20d3f21c29196c46892e9602cc9a2a9b6b819b2",
                        ),
                    )
                ),
                "https://github.com/TQuad/turkish-nlp-qa-dataset",
            ),
            licence="none stated (the repository has no licence file)",
            serves=(
                f"{KAYA_TANTUG}, Tables 7-8 (QA EM / F1 on the 892 dev questions)",
                f"{POLATBILEK}, Table 5.11 (QA exact match; its 892 test questions)",
            ),
            conversion="squad_copy",
            # The papers report on the published dev file: it is the test split here, and
            # downstream.prepare sets a seeded tenth of the training contexts aside as valid.
            splits={"train": "train-v0.1.json", "test": "dev-v0.1.json"},
            expected={"train": 8_308, "test": 892},
            unit="questions",
        ),
        DataSet(
            name="germeval2014",
            task="ner",
            title="GermEval 2014 NER (news and Wikipedia; 12 classes, outer chunks)",
            source=UrlSource(
                "germeval2014",
                tuple(
                    SourceFile(f"https://drive.google.com/uc?export=download&id={drive_id}", name)
                    for name, drive_id in _GERMEVAL_DRIVE.items()
                ),
                "https://sites.google.com/site/germeval2014ner/data",
            ),
            licence="CC BY 4.0",
            serves=(f"{ZOELLNER}, Tables 6, 8 and 11 (GermEval 2014 outer chunks, entity F1)",),
            conversion="germeval",
            splits={
                "train": "NER-de-train.tsv",
                "valid": "NER-de-dev.tsv",
                "test": "NER-de-test.tsv",
            },
            expected={"train": 24_000, "valid": 2_200, "test": 5_100},
            unit="sentences",
            preprocessing="the outer (top-level) entity column, as the paper evaluates",
        ),
        _ler("ler-fg", "fine", "the 19 fine-grained classes, as published"),
        _ler("ler-cg", "coarse", "the 19 fine classes mapped onto the 7 coarse ones"),
        _neiss(
            "arendt",
            "Arendt",
            "arendt",
            "CC BY-NC-SA 3.0 DE: non-commercial",
            "H. Arendt edition (Zöllner et al.; person, place, ethnicity, organization, "
            "event, language)",
            (8_582, 1_073, 1_073),
        ),
        _neiss(
            "sturm",
            "Sturm",
            "sturm",
            "CC BY 4.0",
            "Sturm edition letters (Zöllner et al.; pers, date, place)",
            (2_636, 326, 285),
        ),
    ]
    return {dataset.name: dataset for dataset in datasets}


DATASETS: Dict[str, DataSet] = _registry()

# Each paper's downstream comparison, by name: `fetch` and `grid-encoders --tasks` take these too.
COLLECTIONS: Dict[str, Tuple[str, ...]] = {
    "bert2d-paper": (
        "turkish-sentiment",
        "turkish-wiki-ner",
        "ud-turkish-imst",
        "ud-turkish-boun",
        "tquad",
    ),
    "bert-elmo-thesis": ("tquad",),
    "small-bert-paper": ("germeval2014", "ler-cg", "ler-fg", "arendt", "sturm"),
}


class UnknownDataSetError(KeyError):
    """A name that is neither a data set nor a collection; the message lists both."""

    def __str__(self) -> str:
        return str(self.args[0])


def resolve(names: Sequence[str]) -> List[DataSet]:
    """The data sets of `names` (data sets or collections), each once, in order.

    Raises:
        UnknownDataSetError: naming the unknown name and listing the known ones.
    """
    resolved: Dict[str, DataSet] = {}
    for name in names:
        if name in COLLECTIONS:
            members = COLLECTIONS[name]
        elif name in DATASETS:
            members = (name,)
        else:
            raise UnknownDataSetError(
                f"unknown data set {name!r}; the catalogue has {', '.join(DATASETS)} and the "
                f"collections {', '.join(COLLECTIONS)}"
            )
        for member in members:
            resolved.setdefault(member, DATASETS[member])
    return list(resolved.values())
