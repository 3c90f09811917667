"""`python -m fairseq_struct COMMAND ...`: the front door without its console script."""

import sys

from fairseq_struct.commands import main

sys.exit(main())
