"""`--user-dir fairseq_struct` and `--user-dir user_dir` register the plugin in a fresh
fairseq process (fairseq imports the user dir while it parses the command line)."""

import subprocess

import pytest
from conftest import REPO_ROOT, python_stand_in

PARSE_WITH_USER_DIR = """
import sys
from fairseq import options
assert not {name.split(".")[0] for name in sys.modules} & {"fairseq_struct", "user_dir"}
parser = options.get_training_parser()
args = options.parse_args_and_arch(parser, [
    "data-bin/none", "--user-dir", sys.argv[1], "--task", "translation_morph",
    "--arch", "tp_transformer_tiny", "--role-binding", "plain",
])
print(args.task, args.arch, args.role_binding, args.attention_head_dim, args.max_relative_positions)
"""


@pytest.mark.parametrize("user_dir", ["fairseq_struct", "user_dir", str(REPO_ROOT / "user_dir")])
def test_user_dir_registers_models_tasks_and_arch_options(user_dir, tmp_path):
    # From another working directory only an absolute path can be found by fairseq.
    cwd = REPO_ROOT if not user_dir.startswith("/") else tmp_path
    # A process of its own that has imported fairseq and not the plugin (python_stand_in: a
    # child of the preloaded server, as a new interpreter would be after `from fairseq import`).
    python, env = python_stand_in()
    result = subprocess.run(
        [python, "-c", PARSE_WITH_USER_DIR, user_dir],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [
        "translation_morph",
        "tp_transformer_tiny",
        "plain",
        "32",
        "16",
    ]
