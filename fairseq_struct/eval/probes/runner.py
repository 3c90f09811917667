"""Scoring a pretrained masked-LM encoder on probes: contextual word vectors and the results.

A context is cut into the pretraining run's units and fed as `<s> context </s>` (with
--second-segment, `<s> context </s> TEXT </s>`); a word's vector is the mean of the chosen
layer's outputs over its units (0: embeddings, -1: last layer). Analogy (thesis 5.1.1.1): the
comparison context's word most cosine-similar to V(a) - V(b) + V(c), a, b and c left out.
Contextuality (Tables 5.3-5.5) and "wug" (Tables 5.7, 5.8): cosine similarities of a word's
vectors across contexts, and with the word replaced by "wug".
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from fairseq_struct.eval.probes.format import (
    PROBE_KINDS,
    AnalogyProbe,
    ContextualityProbe,
    PathLike,
    Probe,
    ProbeError,
    WordAt,
    WugProbe,
    analogy_query_words,
    contextuality_words,
    probe_error,
    probed_words,
    wug_words,
)
from fairseq_struct.eval.probes.statistics import analogy_query, answer_analogy, cosine
from fairseq_struct.eval.probes.words import ContextWord, context_words, find_word, same_word

# -------------------------------------------------------------------- encoding the contexts


@dataclass
class EncodedContext:
    """A context's words, their units, and their vectors (mean over units) at one layer."""

    words: List[ContextWord]
    units: List[List[str]]  # per word: the units overlapping it
    unknown: List[List[bool]]  # per word and unit: not in the dictionary
    vectors: Tensor  # (len(words), C)


class ContextEncoder:
    """Encodes contexts with a pretrained encoder into contextual word vectors.

    `cutter` is a `morph.units.UnitCutter` (anything with its `cut_text`). A word-level
    model (BERT-ELMo, which has `embed_words`) embeds a unit that is not in its dictionary from
    the unit's characters, as it would if the word were in the dictionary; piece models see
    <unk> for such a unit.
    """

    def __init__(
        self,
        model: Any,
        dictionary: Any,
        cutter: Any,
        layer: int = -1,
        second_segment: Optional[str] = None,
    ) -> None:
        self.model = model.eval()
        self.dictionary = dictionary
        self.cutter = cutter
        self.layers = len(model.encoder.sentence_encoder.layers)
        if not -(self.layers + 1) <= layer <= self.layers:
            raise ValueError(
                f"--layer {layer}: the encoder has {self.layers} layers, so a layer is one of "
                f"0 (embeddings) .. {self.layers} (last), or -1 .. -{self.layers + 1}"
            )
        self.layer = layer % (self.layers + 1)
        self.characters = hasattr(model.encoder, "embed_words")
        self.second_segment = second_segment
        self._cache: Dict[str, EncodedContext] = {}

    def describe_layer(self) -> str:
        if self.layer == 0:
            return "0 (embeddings)"
        return f"{self.layer} of {self.layers}" + (" (last)" if self.layer == self.layers else "")

    def _ids(self, units: Sequence[str]) -> Tuple[List[int], List[bool]]:
        ids = [self.dictionary.index(unit) for unit in units]
        return ids, [index == self.dictionary.unk() for index in ids]

    @torch.no_grad()
    def encode(self, text: str) -> EncodedContext:
        if text in self._cache:
            return self._cache[text]
        units_per_word, spans = self.cutter.cut_text(text)
        flat = [unit for word in units_per_word for unit in word]
        ids, unknown = self._ids(flat)
        tokens = [self.dictionary.bos()] + ids + [self.dictionary.eos()]
        if self.second_segment:
            second = [u for w in self.cutter.cut_text(self.second_segment)[0] for u in w]
            tokens += self._ids(second)[0] + [self.dictionary.eos()]
        limit = self.model.max_positions()
        if limit and len(tokens) > limit:
            raise ValueError(
                f"the context has {len(tokens)} tokens, the encoder takes at most {limit}: "
                f"{text[:60]!r}..."
            )
        hidden = self._layer_output(torch.tensor([tokens]), flat, unknown)
        words = context_words(text)
        if not words:
            raise ValueError(f"the context has no word: {text[:60]!r}")
        vectors, word_units, word_unknown = [], [], []
        for word in words:
            chosen = [
                position
                for position, (start, end) in enumerate(spans)
                if start < word.end and (end > word.start or start == end == word.start)
            ]
            vectors.append(hidden[[1 + position for position in chosen]].mean(dim=0))
            word_units.append([flat[position] for position in chosen])
            word_unknown.append([unknown[position] for position in chosen])
        encoded = EncodedContext(words, word_units, word_unknown, torch.stack(vectors))
        self._cache[text] = encoded
        return encoded

    def _layer_output(self, tokens: Tensor, units: List[str], unknown: List[bool]) -> Tensor:
        """(T, C) output of the chosen layer for one sequence."""
        encoder = self.model.encoder
        embeddings = None
        if self.characters and any(unknown):
            embeddings = encoder.sentence_encoder.embed_tokens(tokens)
            for position, (unit, missing) in enumerate(zip(units, unknown)):
                if missing:
                    embeddings[0, 1 + position] = encoder.embed_words([unit])[0]
        features, extra = encoder.extract_features(
            tokens, return_all_hiddens=True, token_embeddings=embeddings
        )
        if self.layer == self.layers:  # the model's output (after a final layer norm, if any)
            return features[0]
        return extra["inner_states"][self.layer][:, 0]

    def vector(self, occurrence: WordAt) -> Tensor:
        return self.encode(occurrence.text).vectors[occurrence.index]

    def units_note(self, occurrence: WordAt) -> Tuple[str, str]:
        """The units of a word occurrence, and what a reader should know about them."""
        encoded = self.encode(occurrence.text)
        units = encoded.units[occurrence.index]
        unknown = encoded.unknown[occurrence.index]
        shown = " ".join(units)
        notes = []
        if len(units) > 1:
            notes.append(f"{len(units)} units: vector = their mean")
        if any(unknown):
            missing = [unit for unit, flag in zip(units, unknown) if flag]
            if self.characters:
                notes.append(
                    f"not in the dictionary, embedded from characters: {' '.join(missing)}"
                )
            else:
                notes.append(f"<unk> (not in the dictionary): {' '.join(missing)}")
        return shown, "; ".join(notes)


# ------------------------------------------------------------------------ running probes


def run_analogy(probe: AnalogyProbe, encoder: ContextEncoder, top: int) -> Dict[str, Any]:
    a, b, c = (encoder.vector(at) for at in analogy_query_words(probe))
    query = analogy_query(a, b, c)
    compare = probe.contexts[probe.compare_index]
    encoded = encoder.encode(compare)
    candidates = [(word.form, vector) for word, vector in zip(encoded.words, encoded.vectors)]
    try:
        answer = answer_analogy(query, candidates, [w.word for w in probe.query_words])
    except ValueError as error:
        raise probe_error(probe, str(error)) from None
    expected_similarity = None
    if probe.expected:
        index = find_word(encoded.words, probe.expected)
        expected_similarity = cosine(query, encoded.vectors[index])
    return {
        "probe": probe.name,
        "query": probe.query_text(),
        "compare_context": probe.compare_index + 1,
        "answer": answer.word,
        "similarity": answer.similarity,
        "expected": probe.expected,
        "correct": same_word(answer.word, probe.expected) if probe.expected else None,
        "expected_similarity": expected_similarity,
        "p_value": answer.p_value,
        "compared_words": answer.compared,
        "top": [{"word": w, "similarity": s} for w, s in answer.ranking[:top]],
    }


def run_contextuality(probe: ContextualityProbe, encoder: ContextEncoder) -> List[Dict[str, Any]]:
    occurrences = contextuality_words(probe)
    _, target = occurrences[0]
    anchor = encoder.vector(target)
    return [
        {
            "probe": probe.name,
            "word": probe.word,
            "compared": occurrence.label,
            "sense": sense,
            "similarity": cosine(anchor, encoder.vector(occurrence)),
        }
        for sense, occurrence in occurrences[1:]
    ]


def run_wug(probe: WugProbe, encoder: ContextEncoder, top: int) -> List[Dict[str, Any]]:
    """Tables 5.7 (from the word in context 1) and 5.8 (from the replacement in context 1)."""
    pairs = wug_words(probe)
    rows = []
    for anchor in pairs[0]:
        compared = [other for pair in pairs for other in pair if other != anchor]
        nearest = _nearest_words(encoder, anchor, pairs[-1][0].text, top)
        for other in compared:
            rows.append(
                {
                    "probe": probe.name,
                    "from": anchor.label,
                    "to": other.label,
                    "similarity": cosine(encoder.vector(anchor), encoder.vector(other)),
                    "nearest_in_last_context": nearest,
                }
            )
    return rows


def _nearest_words(encoder: ContextEncoder, anchor: WordAt, text: str, top: int) -> List[Any]:
    """The words of `text` most similar to `anchor` (the thesis's Figure 5.1)."""
    vector = encoder.vector(anchor)
    encoded = encoder.encode(text)
    scored = [(w.form, cosine(vector, v)) for w, v in zip(encoded.words, encoded.vectors)]
    return [{"word": w, "similarity": s} for w, s in sorted(scored, key=lambda x: -x[1])[:top]]


def run_probes(probes: Sequence[Probe], encoder: ContextEncoder, top: int = 5) -> Dict[str, Any]:
    results: Dict[str, Any] = {kind: [] for kind in PROBE_KINDS}
    results["words"] = []
    for probe in probes:
        try:
            if isinstance(probe, AnalogyProbe):
                results["analogy"].append(run_analogy(probe, encoder, top))
            elif isinstance(probe, ContextualityProbe):
                results["contextuality"].extend(run_contextuality(probe, encoder))
            else:
                results["wug"].extend(run_wug(probe, encoder, top))
            for occurrence in probed_words(probe):
                units, note = encoder.units_note(occurrence)
                results["words"].append(
                    {"probe": probe.name, "word": occurrence.label, "units": units, "note": note}
                )
        except ProbeError:
            raise
        except ValueError as error:  # a context too long, a word the segmenter cannot cut
            raise probe_error(probe, str(error)) from None
    return results


def load_encoder(
    checkpoint: PathLike, data: PathLike, layer: int, second_segment: Optional[str]
) -> Tuple[ContextEncoder, str]:
    from fairseq import checkpoint_utils

    import fairseq_struct

    fairseq_struct.register()  # the models, tasks and safe globals a checkpoint names
    from fairseq_struct.morph.units import PretrainingUnits, UnitCutter

    units = PretrainingUnits.from_data_dir(data)
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides={"data": str(data)}
    )
    encoder = ContextEncoder(
        models[0], task.source_dictionary, UnitCutter(units), layer, second_segment
    )
    arch = getattr(cfg.model, "arch", None) or getattr(cfg.model, "_name", "?")
    return encoder, f"{arch}, {units.describe()}"
