"""The front door imports fairseq without scikit-learn, scipy and pyarrow
(fairseq_struct/deferred_imports.py), and fairseq works as before: every task and criterion is
registered, the functions it took from them give scikit-learn's and scipy's results, and a later
`import sklearn` is scikit-learn itself. Each check is a new interpreter: this one has imported
fairseq, and scikit-learn with it."""

import subprocess
import sys

from conftest import REPO_ROOT, json_from_new_interpreter

DEFERRED_PACKAGES = ("sklearn", "scipy", "pandas", "pyarrow")

AFTER_FAIRSEQ = """
import json, sys
from fairseq_struct import deferred_imports
if sys.argv[1] == "deferred":
    deferred_imports.install()
import fairseq_struct
fairseq_struct.register()
loaded = [name for name in %r if name in sys.modules]

from fairseq.criterions import CRITERION_REGISTRY, sentence_prediction
from fairseq.tasks import TASK_REGISTRY, audio_classification
import numpy as np
x, y = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 2.0, 5.0])
gold, guess = [0, 1, 1, 0, 1], [0, 1, 0, 0, 1]
results = {
    "loaded_with_fairseq": loaded,
    "tasks": sorted(TASK_REGISTRY),
    "criterions": sorted(CRITERION_REGISTRY),
    "pearsonr": float(sentence_prediction.pearsonr(x, y)[0]),
    "spearmanr": float(sentence_prediction.spearmanr(x, y)[0]),
    "f1": float(sentence_prediction.f1_score(gold, guess)),
    "mcc": float(sentence_prediction._matthews_corrcoef(gold, guess)),
    "roc_fpr": audio_classification.sklearn_metrics.roc_curve(gold, [0.1, 0.9, 0.4, 0.2, 0.8])[0].tolist(),
}
import sklearn.metrics, scipy.stats
results["real_sklearn"] = hasattr(sys.modules["sklearn"], "__file__")
results["real_scipy"] = hasattr(sys.modules["scipy"], "__file__")
print(json.dumps(results))
""" % (DEFERRED_PACKAGES,)


def fairseq_as_imported(how: str) -> dict:
    return json_from_new_interpreter(AFTER_FAIRSEQ, how)


def test_fairseq_imports_without_them_and_computes_what_it_did():
    deferred, stock = fairseq_as_imported("deferred"), fairseq_as_imported("stock")

    assert deferred["loaded_with_fairseq"] == []
    assert {"sklearn", "scipy"} <= set(stock["loaded_with_fairseq"])  # what is deferred
    for key in ("tasks", "criterions", "pearsonr", "spearmanr", "f1", "mcc", "roc_fpr"):
        assert deferred[key] == stock[key], key
    assert "audio_classification" in deferred["tasks"]
    assert "sentence_prediction" in deferred["criterions"]
    assert deferred["real_sklearn"] and deferred["real_scipy"]


def test_the_front_door_defers_them():
    """`fairseq-struct COMMAND` installs the deferral before its command imports fairseq."""
    probe = (
        "import sys, atexit\n"
        "from fairseq_struct import commands\n"
        "atexit.register(lambda: print('LOADED', [n for n in %r if n in sys.modules],"
        " 'fairseq' in sys.modules))\n"
        "try:\n"
        "    commands.main(['model-only', '--help'])  # a command's module, then its usage\n"
        "except SystemExit:\n"
        "    pass\n"
        "import fairseq_struct; fairseq_struct.register()  # as the command would next\n"
    ) % (DEFERRED_PACKAGES,)
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "LOADED [] True"
