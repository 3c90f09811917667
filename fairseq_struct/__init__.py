"""fairseq-struct: structure-aware models for morphologically rich languages, as a fairseq plugin.

The package registers its components with fairseq (`register`, which imports `plugin`: the
repairs of fairseq and torch, then every model, task, criterion and text encoder) whenever
fairseq is loaded: at once when fairseq is loaded already (`--user-dir`: fairseq-train,
fairseq-generate, torchrun and the workers they spawn), else as soon as fairseq finishes
loading. A command line that needs no model (`fairseq-struct score`, ...) never loads fairseq,
and so starts without torch or fairseq.
"""

import importlib.abc
import importlib.util
import sys
from typing import Any, Optional, Sequence


def register() -> None:
    """Apply the repairs of fairseq and torch and register every component with fairseq (what
    `--user-dir` does); once is enough, again costs nothing."""
    from fairseq_struct import plugin  # noqa: F401


class _RegisterAfterFairseq(importlib.abc.MetaPathFinder):
    """A post-import hook: fairseq's own loader runs, then `register`."""

    def find_spec(self, name: str, path: Optional[Sequence[str]], target: Any = None) -> Any:
        if name != "fairseq":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            load = spec.loader.exec_module

            def load_then_register(module: Any) -> None:
                load(module)
                register()

            spec.loader.exec_module = load_then_register  # type: ignore[method-assign]
        return spec


if "fairseq" in sys.modules:  # imported by fairseq (--user-dir), or after it
    register()
else:
    sys.meta_path.insert(0, _RegisterAfterFairseq())
