"""The public corpora of the paper, where to get them, and how to turn them into plain text.

    fairseq-struct corpora fetch setimes-en-tr --out raw/
    fairseq-struct corpora list

`fetch` downloads and verifies each archive of a corpus (docs/translation.md says how) and
writes its text as OUT/NAME/SPLIT.LANG, one sentence a line, the two languages line-aligned.
"""

import argparse
import re
import sys
import tarfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Dict, Iterable, Iterator, Optional, Tuple, Union

from fairseq_struct.commands import program_name
from fairseq_struct.corpora.clean_corpus import atomic_outputs
from fairseq_struct.corpora.download import DownloadError, download, record_or_verify_sha256
from fairseq_struct.corpus_io import CorpusError

PathLike = Union[str, Path]


@dataclass(frozen=True)
class Archive:
    url: str
    filename: str
    md5: Optional[str] = None  # published checksum, where there is one
    # Set when the file sits behind a landing page and must be downloaded by hand.
    landing_page: Optional[str] = None


@dataclass(frozen=True)
class Member:
    """One file inside an archive: one language of one split."""

    archive: Archive
    path: str
    split: str
    lang: str
    sgml: bool = False  # WMT's "fake SGML": the text is in <seg> lines


@dataclass(frozen=True)
class Corpus:
    name: str
    description: str
    source_lang: str
    target_lang: str
    members: Tuple[Member, ...]
    # Published sentence-pair counts, checked after extraction: split -> pairs.
    expected_pairs: Dict[str, int] = field(default_factory=dict)

    @property
    def splits(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(member.split for member in self.members))


def _opus(corpus: str, version: str, stem: str, name: str, description: str, **kw) -> Corpus:
    # OPUS's Moses-format downloads: one zip with STEM.en-tr.en and STEM.en-tr.tr (plus README,
    # LICENSE and an .xml/.ids file); https://opus.nlpl.eu links to these object-store URLs.
    url = f"https://object.pouta.csc.fi/OPUS-{corpus}/{version}/moses/en-tr.txt.zip"
    archive = Archive(url, f"{corpus}-{version}-en-tr.txt.zip")
    members = tuple(
        Member(archive, f"{stem}.en-tr.{lang}", "corpus", lang) for lang in ("en", "tr")
    )
    return Corpus(name, description, "en", "tr", members, **kw)


def _sacrebleu(test_set: str, langpair: str, split: str) -> Tuple[Member, Member]:
    """The source and reference of a WMT test set, as sacreBLEU's registry describes them."""
    from sacrebleu.dataset import DATASETS  # imported here: only the WMT corpora need it

    dataset = DATASETS[test_set]
    archive = Archive(dataset.data[0], f"{test_set.replace('/', '-')}.tgz", md5=dataset.md5[0])
    source_path, reference_path = dataset.langpairs[langpair][:2]
    source_lang, target_lang = langpair.split("-")
    return (
        Member(archive, source_path, split, source_lang, sgml=True),
        Member(archive, reference_path, split, target_lang, sgml=True),
    )


_HANSARD = Archive(
    url="https://nrc-digital-repository.canada.ca/eng/view/dataset/"
    "?id=c7e34fa7-7629-43c2-bd6d-19b32bf64f60",
    filename="Nunavut-Hansard-Inuktitut-English-Parallel-Corpus-3.0.1.tgz",
    landing_page="https://nrc-digital-repository.canada.ca/eng/view/dataset/"
    "?id=c7e34fa7-7629-43c2-bd6d-19b32bf64f60",
)
_HANSARD_SPLITS = {"train": "train", "valid": "dev-dedup", "test": "test-dedup"}


def _registry() -> Dict[str, Corpus]:
    corpora = [
        _opus(
            "OpenSubtitles",
            "v2018",
            "OpenSubtitles",
            "opensubtitles-en-tr",
            "OpenSubtitles2018 English-Turkish (Lison and Tiedemann 2016) from OPUS; the paper "
            "samples its 1.4m/5m/36m subsets from it (see `splits`)",
        ),
        _opus(
            "SETIMES",
            "v2",
            "SETIMES",
            "setimes-en-tr",
            "SETimes2 English-Turkish from OPUS, the WMT18 training data the paper fine-tunes on",
            # OPUS's corpus page and the paper's table 3 both give 207,678 pairs.
            expected_pairs={"corpus": 207_678},
        ),
        Corpus(
            "hansard-en-iu",
            "Nunavut Hansard Inuktitut-English Parallel Corpus 3.0 (Joanis et al. 2020) with its "
            "own train/dev/test split (dev and test de-duplicated); download by hand",
            "en",
            "iu",
            tuple(
                Member(
                    _HANSARD,
                    f"Nunavut-Hansard-Inuktitut-English-Parallel-Corpus-3.0/split/{stem}.{lang}",
                    split,
                    lang,
                )
                for split, stem in _HANSARD_SPLITS.items()
                for lang in ("en", "iu")
            ),
        ),
    ]
    by_name = {corpus.name: corpus for corpus in corpora}
    # WMT English-Turkish: newstest2017 (3,007 pairs) to validate and newstest2018 (3,000) to
    # test, the sizes of the paper's SETimes row in table 3.
    by_name["wmt-en-tr"] = Corpus(
        "wmt-en-tr",
        "WMT newstest2017 (valid) and newstest2018 (test) English-Turkish, via sacreBLEU",
        "en",
        "tr",
        _sacrebleu("wmt17", "en-tr", "valid") + _sacrebleu("wmt18", "en-tr", "test"),
        expected_pairs={"valid": 3007, "test": 3000},
    )
    by_name["wmt20-en-iu"] = Corpus(
        "wmt20-en-iu",
        "WMT20 newsdev2020 (valid) and newstest2020 (test) English-Inuktitut, via sacreBLEU",
        "en",
        "iu",
        _sacrebleu("wmt20/dev", "en-iu", "valid") + _sacrebleu("wmt20", "en-iu", "test"),
    )
    return by_name


CORPORA: Dict[str, Corpus] = _registry()


def fetch(corpus: Corpus, out_dir: PathLike) -> Dict[str, Tuple[Path, Path]]:
    """Download, verify and extract `corpus` into OUT_DIR/NAME; split -> (source, target) files.

    Raises DownloadError (naming the URL) or CorpusError (naming the file and the problem).
    """
    directory = Path(out_dir) / corpus.name
    archives = {member.archive for member in corpus.members}
    for archive in sorted(archives, key=lambda a: a.filename):
        path = directory / archive.filename
        if archive.landing_page is not None and not path.exists():
            raise DownloadError(
                f"{archive.landing_page}: {corpus.name} cannot be downloaded automatically; "
                f"download {archive.filename} from that page and put it at {path}"
            )
        download(archive.url, path, md5=archive.md5)
        check_archive(path)
        if archive.md5 is None:
            record_or_verify_sha256(path, archive.url)
    outputs: Dict[str, Tuple[Path, Path]] = {}
    for split in corpus.splits:
        paths = tuple(
            directory / f"{split}.{lang}" for lang in (corpus.source_lang, corpus.target_lang)
        )
        members = [
            _member(corpus, split, lang) for lang in (corpus.source_lang, corpus.target_lang)
        ]
        counts = [
            extract(member, directory / member.archive.filename, out)
            for member, out in zip(members, paths)
        ]
        if counts[0] != counts[1]:
            raise CorpusError(
                f"{paths[0]} has {counts[0]} lines but {paths[1]} has {counts[1]} "
                f"(from {members[0].path} and {members[1].path}): the archive is not line-aligned"
            )
        expected = corpus.expected_pairs.get(split)
        if expected is not None and counts[0] != expected:
            raise CorpusError(
                f"{paths[0]}: {counts[0]} pairs, but {corpus.name} {split} is published with "
                f"{expected}; the archive differs from the documented release"
            )
        outputs[split] = paths
    return outputs


def _member(corpus: Corpus, split: str, lang: str) -> Member:
    return next(m for m in corpus.members if m.split == split and m.lang == lang)


def check_archive(path: Path) -> None:
    """Read the whole archive: every zip CRC, or every tar member. CorpusError if damaged."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
            if bad is not None:
                raise CorpusError(f"{path}: member {bad} fails its CRC check; delete and re-fetch")
            return
        with tarfile.open(path, "r:*") as archive:
            for info in archive:
                if info.isfile():
                    reader = archive.extractfile(info)
                    while reader.read(1 << 20):
                        pass
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as error:
        raise CorpusError(f"{path}: damaged archive ({error}); delete it and fetch again") from None


def extract(member: Member, archive_path: Path, out: Path) -> int:
    """Write the member's lines (its <seg> texts if SGML) to `out` atomically; returns lines."""
    lines = 0
    with atomic_outputs([out], binary=True) as (file,):
        for line in _member_lines(member, archive_path):
            file.write(line + b"\n")
            lines += 1
    return lines


def _member_lines(member: Member, archive_path: Path) -> Iterator[bytes]:
    with _open_member(archive_path, member.path) as raw:
        for line in raw:
            line = line.rstrip(b"\r\n")
            if member.sgml:
                if not line.startswith(b"<seg "):
                    continue
                yield _sgml_segment(line.decode("utf-8")).encode("utf-8")
            else:
                yield line


_SEGMENT = re.compile(r"<seg.*?>(.*)</seg>.*?")
_WHITESPACE_RUN = re.compile(r"\s+")


def _sgml_segment(line: str) -> str:
    # Exactly sacrebleu.dataset.fake_sgml.FakeSGMLDataset._convert_format, so the references
    # are the ones sacreBLEU scores against.
    return _WHITESPACE_RUN.sub(" ", _SEGMENT.sub(r"\1", line).strip())


@contextmanager
def _open_member(archive_path: Path, member_path: str) -> Iterator[IO[bytes]]:
    try:
        if zipfile.is_zipfile(archive_path):
            with zipfile.ZipFile(archive_path) as archive, archive.open(member_path) as member:
                yield member
        else:
            with tarfile.open(archive_path, "r:*") as archive:
                yield archive.extractfile(member_path)
    except KeyError:
        raise CorpusError(f"{archive_path}: has no member {member_path}") from None


def describe(corpora: Iterable[Corpus]) -> str:
    lines = []
    for corpus in corpora:
        lines.append(f"{corpus.name}: {corpus.description}")
        for archive in sorted({m.archive for m in corpus.members}, key=lambda a: a.filename):
            check = f"md5 {archive.md5}" if archive.md5 else "sha256 recorded at first download"
            manual = " (download by hand)" if archive.landing_page else ""
            lines.append(f"  {archive.url}{manual}, {check}")
    return "\n".join(lines)


def main(argv: Optional[Iterable[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.corpora.catalog"),
        description="Download, verify and extract the paper's public corpora.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the registered corpora, their URLs and checksums")
    fetch_parser = commands.add_parser("fetch", help="download and extract one corpus")
    fetch_parser.add_argument("name", choices=sorted(CORPORA))
    fetch_parser.add_argument("--out", default="raw", help="writes OUT/NAME/SPLIT.LANG")
    args = parser.parse_args(argv)
    if args.command == "list":
        print(describe(CORPORA.values()))
        return 0
    try:
        outputs = fetch(CORPORA[args.name], args.out)
    except (DownloadError, CorpusError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for split, (source, target) in outputs.items():
        print(f"{split}: {source} {target}")
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
