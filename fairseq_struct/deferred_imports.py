"""fairseq's start-up without scikit-learn, scipy and pyarrow, which it imports for things this
project never runs: the front door (`fairseq-struct COMMAND`) defers them to their first use.

`import fairseq` imports every task and criterion module of fairseq:
- `tasks/audio_classification.py` takes `sklearn.metrics` (an ROC curve of its validation) and
  `criterions/sentence_prediction.py` takes `f1_score` and `matthews_corrcoef` from it, and
  `pearsonr` and `spearmanr` from `scipy.stats` (GLUE's metrics). scikit-learn and scipy, with
  the pandas that scikit-learn imports, would be loaded before a command's first line;
- `data/plasma_utils.py` tries `import pyarrow.plasma`, which every pyarrow since 12 lacks: the
  import fails, as fairseq expects where pyarrow is missing, after pyarrow itself has loaded.

`install()`, called by the front door before its command runs, watches for the import of
fairseq. While fairseq's package runs its imports:
- `sklearn.metrics` and `scipy.stats` (and their packages) are stand-ins: a name taken from
  them is a function that imports the real module and calls its function of that name;
- a pyarrow without plasma is answered "no pyarrow.plasma" without being loaded.

Once fairseq has imported, the stand-ins leave `sys.modules`, so any later `import sklearn`
(seqeval's, a user's) is the real one. Processes of fairseq's own commands
(`fairseq-train --user-dir ...`) import fairseq before the plugin and are unchanged.
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional

# The modules fairseq takes functions from at its import, each to be imported at their first call.
DEFERRED = ("sklearn.metrics", "scipy.stats")


class _FunctionsOnFirstCall(types.ModuleType):
    """A module as fairseq sees it: each name a function that imports the real module when
    called. Dunder names (what `inspect` and pickling look up) are not names of it."""

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)
        module_name = self.__name__

        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(importlib.import_module(module_name), name)(*args, **kwargs)

        call.__name__ = call.__qualname__ = name
        return call


def _pyarrow_lacks_plasma() -> bool:
    """Whether an installed pyarrow has no `plasma` module (pyarrow >= 12), seen from its files
    without importing it."""
    spec = importlib.util.find_spec("pyarrow")
    if spec is None or not spec.submodule_search_locations:
        return False  # no pyarrow: fairseq's import fails at once anyway
    return not any(
        any(Path(location).glob("plasma*")) for location in spec.submodule_search_locations
    )


@contextmanager
def stand_ins() -> Iterator[None]:
    """While the block runs: stand-ins for the DEFERRED modules whose package is not imported
    yet, and no `pyarrow.plasma` where pyarrow has none."""
    added: Dict[str, Optional[types.ModuleType]] = {}
    for name in DEFERRED:
        package_name, _, module_name = name.partition(".")
        if package_name in sys.modules:
            continue
        module = _FunctionsOnFirstCall(name)
        package = types.ModuleType(package_name)
        package.__path__ = []  # a package: `from sklearn.metrics import f1_score` finds the module
        setattr(package, module_name, module)
        added.update({package_name: package, name: module})
    if "pyarrow" not in sys.modules and _pyarrow_lacks_plasma():
        added["pyarrow.plasma"] = None  # its import raises ImportError, pyarrow is not loaded
    sys.modules.update(added)
    try:
        yield
    finally:
        for name, module in added.items():
            if name in sys.modules and sys.modules[name] is module:
                del sys.modules[name]


class _StandInsWhileExecuting(importlib.abc.Loader):
    """fairseq's own loader, run with the stand-ins in place; the module keeps fairseq's loader
    as its `__loader__`."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__loader__ = module.__spec__.loader = self.loader
        with stand_ins():
            self.loader.exec_module(module)


class _FairseqImportWatcher(importlib.abc.MetaPathFinder):
    """Finds `fairseq` as the other finders do, with its loader wrapped; then steps aside."""

    def find_spec(self, name: str, path: Any = None, target: Any = None):
        if name != "fairseq":
            return None
        uninstall()
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _StandInsWhileExecuting(spec.loader)
        return spec


_watcher = _FairseqImportWatcher()


def install() -> None:
    """Defer scikit-learn, scipy and pyarrow at fairseq's coming import (nothing if it has
    happened)."""
    if "fairseq" not in sys.modules and _watcher not in sys.meta_path:
        sys.meta_path.insert(0, _watcher)


def uninstall() -> None:
    if _watcher in sys.meta_path:
        sys.meta_path.remove(_watcher)
