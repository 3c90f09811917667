"""An exact, faster re-implementation of zemberek-python's word analysis (`RuleBasedAnalyzer`).

Zemberek's breadth-first walk of the suffix graph, with what depends only on (state, phonetic
attributes) computed once per pair and paths that cannot end dropped (`tail_automaton`): the same
analyses in the same order. `fast_morphology(morphology)` gives a shallow copy of a
`TurkishMorphology` that uses it; the original stays the unmodified reference.
"""

import copy
import logging
from functools import lru_cache
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

import numpy as np

from fairseq_struct.morph.zemberek.loading import import_zemberek
from fairseq_struct.morph.zemberek.tail_automaton import StepTable, TailAutomaton

import_zemberek()
from zemberek.core.turkish import PhoneticAttribute, RootAttribute, TurkishAlphabet  # noqa: E402
from zemberek.morphology.analysis.attributes_helper import AttributesHelper  # noqa: E402
from zemberek.morphology.analysis.rule_based_analyzer import RuleBasedAnalyzer  # noqa: E402
from zemberek.morphology.analysis.single_analysis import SingleAnalysis  # noqa: E402
from zemberek.morphology.analysis.surface_transitions import SurfaceTransition  # noqa: E402
from zemberek.morphology.morphotactics.conditions import Conditions  # noqa: E402
from zemberek.morphology.morphotactics.operator import Operator  # noqa: E402
from zemberek.morphology.morphotactics.turkish_morphotactics import (  # noqa: E402
    TurkishMorphotactics,
)

logger = logging.getLogger(__name__)

Attributes = FrozenSet[PhoneticAttribute]
_TokenType = SurfaceTransition.TemplateTokenType
_CANNOT_TERMINATE = PhoneticAttribute.CannotTerminate
_DUMMY = RootAttribute.Dummy
_MISSING = object()


class _Path:
    """Zemberek's `SearchPath`, with slots: the conditions read these attributes and methods."""

    __slots__ = (
        "tail",
        "current_state",
        "transitions",
        "phonetic_attributes",
        "terminal",
        "contains_derivation",
        "contains_suffix_with_surface",
    )

    def __init__(
        self,
        tail: str,
        state: Any,
        transitions: List[Any],
        attributes: Attributes,
        contains_derivation: bool,
        contains_suffix_with_surface: bool,
    ) -> None:
        self.tail = tail
        self.current_state = state
        self.transitions = transitions
        self.phonetic_attributes = attributes
        self.terminal = state.terminal_
        self.contains_derivation = contains_derivation
        self.contains_suffix_with_surface = contains_suffix_with_surface

    def has_dictionary_item(self, item: Any) -> bool:
        return item == self.transitions[0].lexical_transition.item

    def contains_suffix_with_surface_(self) -> bool:
        return self.contains_suffix_with_surface

    def get_stem_transition(self) -> Any:
        return self.transitions[0].lexical_transition

    def get_dictionary_item(self) -> Any:
        return self.transitions[0].lexical_transition.item

    def get_previous_state(self) -> Any:
        return None if len(self.transitions) < 2 else self.transitions[-2].get_state()


class FastRuleBasedAnalyzer:
    """`RuleBasedAnalyzer.analyze` (not ASCII-tolerant) with the per-state work memoised."""

    def __init__(self, analyzer: RuleBasedAnalyzer) -> None:
        if analyzer.ascii_tolerant:
            raise ValueError("the ASCII-tolerant analyser is not re-implemented")
        # UnidentifiedTokenAnalyzer reads these two and adds runtime stems to stem_transitions.
        self.lexicon = analyzer.lexicon
        self.stem_transitions = analyzer.stem_transitions
        self._interned: Dict[Attributes, Attributes] = {}
        # (state, attributes) -> the steps a tail starting with a character may take, by that
        # character, and the steps any other tail may take (those that consume no character).
        self._steps: Dict[Tuple[int, Attributes], StepTable] = {}
        # (morpheme, surface) -> its MorphemeData in analyses (None: left out of them)
        self._morpheme_data: Dict[Tuple[int, str], Optional[SingleAnalysis.MorphemeData]] = {}
        # id(stem) -> (stem, its attributes, its SurfaceTransition): what every path from it
        # starts with (the analyses only read the transition, so paths can share it)
        self._stem_starts: Dict[int, Tuple[Any, Attributes, SurfaceTransition]] = {}
        # Paths that cannot become an analysis are dropped: the walk is the same without them.
        self._can_end = TailAutomaton(self._table).can_end

    def analyze(self, word: str) -> Tuple[SingleAnalysis, ...]:
        paths = []
        for stem in self._stems(word):
            start = self._stem_starts.get(id(stem))
            if start is None or start[0] is not stem:
                # the stem is kept in the entry, so its id cannot be another stem's
                attributes = self._intern(frozenset(stem.phonetic_attributes))
                start = self._stem_starts[id(stem)] = (
                    stem,
                    attributes,
                    SurfaceTransition(stem.surface, stem),
                )
            tail = word[len(stem.surface) :]
            paths.append(_Path(tail, stem.to, [start[2]], start[1], False, False))
        if len(paths) <= 30:  # else Zemberek prunes cyclic paths first: keep its list
            paths = [
                p for p in paths if self._can_end(p.current_state, p.phonetic_attributes, p.tail)
            ]
        return tuple(map(self._analysis, self._search(paths)))

    def _analysis(self, path: _Path) -> SingleAnalysis:
        """`SingleAnalysis.from_search_path(path)`, with the data of each morpheme built once."""
        morphemes = []
        derivations = 0
        for transition in path.transitions:
            state = transition.lexical_transition.to
            derivations += state.derivative
            key = (id(state.morpheme), transition.surface)
            data = self._morpheme_data.get(key, _MISSING)
            if data is _MISSING:
                data = self._morpheme_data[key] = _morpheme_data(state.morpheme, transition.surface)
            if data is not None:
                morphemes.append(data)
        # Zemberek sizes the groups by derivative states and fills them at derivational morphemes
        boundaries = np.zeros(derivations + 1, dtype=np.int32)
        group = 1
        for index, data in enumerate(morphemes):
            if data.morpheme.derivational_:
                boundaries[group] = index
                group += 1
        item = path.get_dictionary_item()
        if _DUMMY in item.attributes:
            item = item.reference_item
        return SingleAnalysis(item, morphemes, boundaries)

    def _stems(self, word: str) -> List[Any]:
        """`StemTransitions.get_prefix_matches`: the stems of every prefix, shortest first."""
        single, multi = self.stem_transitions.single_stems, self.stem_transitions.multi_stems
        matches = []
        for end in range(1, len(word) + 1):
            prefix = word[:end]
            stem = single.get(prefix)
            if stem is not None:
                matches.append(stem)
            elif prefix in multi:
                matches.extend(multi[prefix])
        return matches

    def _search(self, paths: List[_Path]) -> List[_Path]:
        """`RuleBasedAnalyzer.search`: breadth first, results in the order they are reached."""
        if len(paths) > 30:
            paths = RuleBasedAnalyzer.prune_cyclic_paths(paths)
        results = []
        while paths:
            following: List[_Path] = []
            for path in paths:
                if not path.tail:
                    if path.terminal and _CANNOT_TERMINATE not in path.phonetic_attributes:
                        results.append(path)
                        continue
                self._advance(path, following)
            paths = following
        return results

    def _advance(self, path: _Path, following: List[_Path]) -> None:
        """`RuleBasedAnalyzer.advance`: append the paths one suffix longer to `following`."""
        tail = path.tail
        attributes = path.phonetic_attributes
        by_first_char, no_char = self._table(path.current_state, attributes)
        for transition, surface, has_surface, conditions, all_tail, part_tail in by_first_char.get(
            tail[:1], no_char
        ):
            if has_surface:
                if not tail:
                    continue
                if surface is None:
                    raise ValueError(f"Zemberek cannot generate a surface of {transition}")
                if not tail.startswith(surface):
                    continue
            failed = False
            for condition in conditions:
                if not condition.accept_(path):
                    failed = True
                    break
            if failed:
                continue
            state = transition.to
            if has_surface:
                rest = tail[len(surface) :]
                successor = all_tail if not rest else part_tail
                if not self._can_end(state, successor, rest):
                    continue
                new = _Path(
                    rest,
                    state,
                    path.transitions + [SurfaceTransition(surface, transition)],
                    successor,
                    path.contains_derivation or state.derivative,
                    path.contains_suffix_with_surface or bool(surface),
                )
            else:
                if not self._can_end(state, attributes, tail):
                    continue
                new = _Path(
                    tail,
                    state,
                    path.transitions + [SurfaceTransition("", transition)],
                    attributes,
                    path.contains_derivation or state.derivative,
                    path.contains_suffix_with_surface,
                )
            following.append(new)

    def _intern(self, attributes: Attributes) -> Attributes:
        return self._interned.setdefault(attributes, attributes)

    def _table(self, state: Any, attributes: Attributes) -> StepTable:
        """The steps of `state` under `attributes`, by the first character of their surface."""
        table = self._steps.get((id(state), attributes))
        return self._steps_of(state, attributes) if table is None else table

    def _steps_of(self, state: Any, attributes: Attributes) -> StepTable:
        steps = []
        for transition in state.outgoing:
            conditions = _remaining_conditions(transition.condition, attributes)
            if conditions is None:
                continue  # a phonetic condition fails: Zemberek's can_pass would say no
            has_surface = bool(transition.token_list)
            surface = _generate_surface(transition, attributes)
            all_tail = part_tail = attributes
            if has_surface and surface is not None:
                all_tail = self._successor(transition, set(attributes))
                part_tail = self._successor(
                    transition, set(_morphemic_attributes(surface, attributes))
                )
            steps.append((transition, surface, has_surface, conditions, all_tail, part_tail))
        # A step stays in every list where `advance` could take it, in Zemberek's order; a
        # surface Zemberek cannot generate (None) raises on any non-empty tail.
        first_chars = {step[1][0] for step in steps if step[1]}
        by_first_char = {
            char: [s for s in steps if s[1] is None or not s[1] or s[1][0] == char]
            for char in first_chars
        }
        no_char = [s for s in steps if s[1] is None or not s[1]]
        table = self._steps[id(state), attributes] = (by_first_char, no_char)
        return table

    def _successor(self, transition: Any, attributes: set) -> Attributes:
        """The end of `RuleBasedAnalyzer.advance`: the attributes a suffix leaves on the path."""
        attributes.discard(_CANNOT_TERMINATE)
        last = transition.get_last_template_token().type_
        if last == _TokenType.LAST_VOICED:
            attributes.add(PhoneticAttribute.ExpectsConsonant)
        elif last == _TokenType.LAST_NOT_VOICED:
            attributes.add(PhoneticAttribute.ExpectsVowel)
            attributes.add(_CANNOT_TERMINATE)
        return self._intern(frozenset(attributes))


class _MorphemeData(SingleAnalysis.MorphemeData):
    """Zemberek's MorphemeData, shared by the analyses that contain it: its hash is kept."""

    def __init__(self, morpheme: Any, surface: str) -> None:
        super().__init__(morpheme, surface)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash


def _morpheme_data(morpheme: Any, surface: str) -> Optional[_MorphemeData]:
    """What `SingleAnalysis.from_search_path` records of a morpheme: nothing of nom and pnon."""
    if morpheme == TurkishMorphotactics.nom or morpheme == TurkishMorphotactics.pnon:
        return None
    return _MorphemeData(morpheme, surface)


def _phonetic_value(condition: Any, attributes: Attributes) -> Optional[bool]:
    """The value of a condition that tests phonetic attributes only; None for any other."""
    if type(condition) is Conditions.HasPhoneticAttribute:
        return condition.attribute in attributes
    if type(condition) is Conditions.NotCondition:
        inner = _phonetic_value(condition.condition, attributes)
        return None if inner is None else not inner
    return None


def _remaining_conditions(condition: Any, attributes: Attributes) -> Optional[Tuple[Any, ...]]:
    """What is left to check of `condition` once the phonetic `attributes` are known.

    None: it cannot pass. Otherwise the conditions that must all accept the path. Conditions
    have no side effects, so deciding some of them earlier does not change the outcome.
    """
    if condition is None:
        return ()
    value = _phonetic_value(condition, attributes)
    if value is not None:
        return () if value else None
    combined = type(condition) is Conditions.CombinedCondition
    if combined and condition.operator == Operator.AND and len(condition.conditions) > 1:
        remaining = []
        for part in condition.conditions:
            value = _phonetic_value(part, attributes)
            if value is False:
                return None
            if value is None:
                remaining.append(part)
        return tuple(remaining)
    return (condition,)


@lru_cache(maxsize=1 << 16)
def _morphemic_attributes(surface: str, attributes: Attributes) -> Attributes:
    """`AttributesHelper.get_morphemic_attributes` (a function of its arguments), memoised:
    step tables ask it of the same short surfaces after the same attributes again and again."""
    return frozenset(AttributesHelper.get_morphemic_attributes(surface, set(attributes)))


def _generate_surface(transition: Any, attributes: Attributes) -> Optional[str]:
    """`SurfaceTransition.generate_surface` without touching Zemberek's surface cache.

    None where Zemberek raises ("Cannot generate A form!"): the analyser raises when it gets
    there, as Zemberek does.
    """
    surface = ""
    for index, token in enumerate(transition.token_list):
        current = _morphemic_attributes(surface, attributes)
        type_ = token.type_
        if type_ == _TokenType.LETTER:
            surface += token.letter
        elif type_ == _TokenType.A_WOVEL:
            if index != 0 or PhoneticAttribute.LastLetterVowel not in attributes:
                if PhoneticAttribute.LastVowelBack in current:
                    surface += "a"
                elif PhoneticAttribute.LastVowelFrontal in current:
                    surface += "e"
                else:
                    return None
        elif type_ == _TokenType.I_WOVEL:
            if index != 0 or PhoneticAttribute.LastLetterVowel not in attributes:
                frontal = PhoneticAttribute.LastVowelFrontal in current
                back = PhoneticAttribute.LastVowelBack in current
                rounded = PhoneticAttribute.LastVowelRounded in current
                if frontal and PhoneticAttribute.LastVowelUnrounded in current:
                    surface += "i"
                elif back and PhoneticAttribute.LastVowelUnrounded in current:
                    surface += "ı"
                elif back and rounded:
                    surface += "u"
                elif frontal and rounded:
                    surface += "ü"
                else:
                    return None
        elif type_ == _TokenType.APPEND:
            if PhoneticAttribute.LastLetterVowel in current:
                surface += token.letter
        elif type_ == _TokenType.DEVOICE_FIRST:
            letter = token.letter
            if PhoneticAttribute.LastLetterVoiceless in current:
                letter = TurkishAlphabet.INSTANCE.devoice(letter)
            surface += letter
        elif type_ in (_TokenType.LAST_VOICED, _TokenType.LAST_NOT_VOICED):
            surface += token.letter
    return surface


class _UnidentifiedTokenAnalyzer:
    """Zemberek's `UnidentifiedTokenAnalyzer` (numbers, unknown proper nouns, ...) on the fast
    analyser, giving no analysis where Zemberek's own code raises: its numeral analysis raises
    a TypeError on "000000." (so stock `analyze_and_disambiguate` crashes on such a line); the
    token is then unknown, which the segmenter keeps whole."""

    def __init__(self, stock: Any, analyzer: FastRuleBasedAnalyzer) -> None:
        self._stock = copy.copy(stock)
        self._stock.analyzer = analyzer

    @property
    def analyzer(self) -> FastRuleBasedAnalyzer:
        return self._stock.analyzer

    def analyze(self, token: Any) -> Tuple[SingleAnalysis, ...]:
        try:
            return self._stock.analyze(token)
        except Exception as error:
            logger.warning(
                "Zemberek cannot analyse %r (%r): taken as unknown", token.content, error
            )
            return ()


def fast_morphology(morphology: Any) -> Any:
    """A shallow copy of `morphology` whose word analysis runs on `FastRuleBasedAnalyzer`."""
    fast = copy.copy(morphology)
    fast.analyzer = FastRuleBasedAnalyzer(morphology.analyzer)
    fast.unidentified_token_analyzer = _UnidentifiedTokenAnalyzer(
        morphology.unidentified_token_analyzer, fast.analyzer
    )
    return fast
