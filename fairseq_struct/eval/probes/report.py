"""The probes' results as text tables (tabulate), one per probe kind, and the probe words."""

from typing import Any, Dict, List, Optional, Sequence

from tabulate import tabulate

from fairseq_struct.eval.probes.statistics import P_VALUE_TEST


def _number(value: Optional[float], digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2g}"


def tables(results: Dict[str, Any]) -> str:
    """A table per probe kind that has results (the analogies with a line on their p-values),
    then the probe words' units, separated by blank lines."""
    parts = []
    if results["analogy"]:
        parts.append(_analogy_table(results["analogy"]))
        parts.append(f"p: {P_VALUE_TEST} similarities (query words excluded)")
    if results["contextuality"]:
        parts.append(_contextuality_table(results["contextuality"]))
    if results["wug"]:
        parts.append(_wug_table(results["wug"]))
    if results["words"]:
        parts.append(_words_table(results["words"]))
    return "\n\n".join(parts)


def _table(rows: List[Sequence[Any]], headers: List[str]) -> str:
    return tabulate(rows, headers=headers, disable_numparse=True)


def _analogy_table(results: List[Dict[str, Any]]) -> str:
    rows = [
        (
            r["probe"],
            r["query"],
            r["answer"],
            _number(r["similarity"]),
            "-" if r["correct"] is None else ("yes" if r["correct"] else "no"),
            _number(r["expected_similarity"]),
            _p(r["p_value"]),
            r["compared_words"],
        )
        for r in results
    ]
    return _table(
        rows, ["analogy", "query", "answer", "sim.", "expected?", "sim. expected", "p", "words"]
    )


def _contextuality_table(results: List[Dict[str, Any]]) -> str:
    rows = [
        (r["probe"], r["word"], r["compared"], r["sense"], _number(r["similarity"]))
        for r in results
    ]
    return _table(
        rows, ["contextuality", "word", "vs. the target's vector in", "sense", "similarity"]
    )


def _wug_table(results: List[Dict[str, Any]]) -> str:
    rows = [(r["probe"], r["from"], r["to"], _number(r["similarity"])) for r in results]
    return _table(rows, ["wug", "from", "to", "similarity"])


def _words_table(results: List[Dict[str, Any]]) -> str:
    rows = [(r["probe"], r["word"], r["units"], r["note"]) for r in results]
    return _table(rows, ["probe words", "word", "units", "note"])
