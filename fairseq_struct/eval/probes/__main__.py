"""`python -m fairseq_struct.eval.probes ...`: the probes' command (cli.main)."""

import sys

from fairseq_struct.eval.probes.cli import main

sys.exit(main())
