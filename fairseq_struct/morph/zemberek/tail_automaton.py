"""Whether a path of Zemberek's suffix-graph search can still end, read off a lazy automaton.

A path can end if some sequence of suffix transitions spells its unread tail and stops at a
terminal state; a deterministic automaton, built lazily (subset construction) and kept across
words, answers that in one look-up per character. It ignores the conditions that are not
phonetic, so it over-accepts: "cannot end" is always right, and dropping such paths is exact.
"""

from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

from fairseq_struct.morph.zemberek.loading import import_zemberek

import_zemberek()
from zemberek.core.turkish import PhoneticAttribute  # noqa: E402

Attributes = FrozenSet[PhoneticAttribute]
# One step of a state's table: (transition, surface (None: cannot be generated), whether it has
# a surface template, conditions, attributes after it when it ends the tail / when it does not).
Step = Tuple[Any, Optional[str], bool, Tuple[Any, ...], Attributes, Attributes]
StepTable = Tuple[Dict[str, List[Step]], List[Step]]

# A configuration of the nondeterministic automaton: a node (an int), or a suffix being read:
# (the rest of its surface, node after it if the tail ends there, node after it otherwise),
# where an empty rest means the surface has just been read.
_Config = Union[int, Tuple[str, int, int]]

_CANNOT_TERMINATE = PhoneticAttribute.CannotTerminate
# Results of a transition besides the index of the next automaton state.
_DEAD = 0  # no configuration left: the tail cannot be read to an end
_ACCEPT = -1  # a surface that cannot be generated was met: the search would try it
# The automaton is rebuilt from scratch when it has this many states (~1 kB each).
_MAX_STATES = 500_000


class TailAutomaton:
    """`can_end(state, attributes, tail)` for the analyser whose step tables `table_of` gives."""

    def __init__(self, table_of: Callable[[Any, Attributes], StepTable]) -> None:
        self._table_of = table_of
        self._reset()

    def _reset(self) -> None:
        self._node_ids: Dict[Tuple[int, Attributes], int] = {}
        self._nodes: List[Tuple[Any, Attributes]] = []
        self._state_ids: Dict[FrozenSet[_Config], int] = {}
        self._configs: List[FrozenSet[_Config]] = []
        self._next: List[Dict[str, int]] = []  # by automaton state: character -> next state
        self._accepts: List[Optional[bool]] = []  # by automaton state, once known
        self._starts: Dict[Tuple[int, Attributes], int] = {}
        # (node, character) -> what reading it from there leads to: automaton states that share
        # nodes share this work
        self._moves: Dict[Tuple[int, str], Union[int, FrozenSet[_Config]]] = {}
        self._state(frozenset())  # _DEAD

    def can_end(self, state: Any, attributes: Attributes, tail: str) -> bool:
        """Whether some path of suffixes from (state, attributes) reads `tail` and ends."""
        if len(self._configs) >= _MAX_STATES:
            self._reset()
        current = self._starts.get((id(state), attributes))
        if current is None:
            start = frozenset((self._node(state, attributes),))
            current = self._starts[id(state), attributes] = self._state(start)
        following = self._next
        for char in tail:
            after = following[current].get(char)
            if after is None:
                after = following[current][char] = self._read(current, char)
            if after <= 0:
                return after == _ACCEPT
            current = after
        accepts = self._accepts[current]
        if accepts is None:
            accepts = self._accepts[current] = self._can_stop(self._configs[current])
        return accepts

    def _node(self, state: Any, attributes: Attributes) -> int:
        key = (id(state), attributes)
        node = self._node_ids.get(key)
        if node is None:
            node = self._node_ids[key] = len(self._nodes)
            self._nodes.append((state, attributes))
        return node

    def _state(self, configs: FrozenSet[_Config]) -> int:
        index = self._state_ids.get(configs)
        if index is None:
            index = self._state_ids[configs] = len(self._configs)
            self._configs.append(configs)
            self._next.append({})
            self._accepts.append(None)
        return index

    def _read(self, current: int, char: str) -> int:
        """The automaton state after reading `char` (a tail goes on: `char` is in it)."""
        after: Set[_Config] = set()
        for config in self._configs[current]:
            if isinstance(config, tuple):
                rest, ends_tail, more_tail = config
                if rest:
                    if rest[0] == char:
                        after.add((rest[1:], ends_tail, more_tail))
                    continue
                config = more_tail  # a surface was read and the tail goes on
            moves = self._moves.get((config, char))
            if moves is None:
                moves = self._moves[config, char] = self._moves_of(config, char)
            if moves is _ACCEPT:
                return _ACCEPT
            after |= moves
        return self._state(frozenset(after))

    def _moves_of(self, node: int, char: str) -> Union[int, FrozenSet[_Config]]:
        """The configurations reading `char` leads to from `node` and the nodes that steps
        reading nothing reach from it; _ACCEPT if a surface that cannot be generated is met."""
        after: Set[_Config] = set()
        pending = [node]
        expanded: Set[int] = set()
        while pending:
            node = pending.pop()
            if node in expanded:
                continue
            expanded.add(node)
            state, attributes = self._nodes[node]
            by_first_char, no_char = self._table_of(state, attributes)
            for transition, surface, has_surface, _, all_tail, part_tail in by_first_char.get(
                char, no_char
            ):
                if not has_surface:  # reads nothing, keeps the attributes
                    pending.append(self._node(transition.to, attributes))
                elif surface is None:
                    return _ACCEPT
                elif not surface:  # reads nothing but needs a tail, which goes on
                    pending.append(self._node(transition.to, part_tail))
                else:  # surface[0] == char: the table lists it under that character
                    ends_tail = self._node(transition.to, all_tail)
                    more_tail = self._node(transition.to, part_tail)
                    after.add((surface[1:], ends_tail, more_tail))
        return frozenset(after)

    def _can_stop(self, configs: Sequence[_Config]) -> bool:
        """Whether a configuration can end here, with the tail read to its end."""
        pending = [
            config if isinstance(config, int) else config[1]
            for config in configs
            if isinstance(config, int) or not config[0]
        ]
        seen: Set[int] = set()
        while pending:
            node = pending.pop()
            if node in seen:
                continue
            seen.add(node)
            state, attributes = self._nodes[node]
            if state.terminal_ and _CANNOT_TERMINATE not in attributes:
                return True
            for transition, _, has_surface, _, _, _ in self._table_of(state, attributes)[1]:
                if not has_surface:  # with no tail left only these can be taken
                    pending.append(self._node(transition.to, attributes))
        return False
