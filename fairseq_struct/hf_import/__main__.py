import sys

from fairseq_struct.cli_logging import configure_logging
from fairseq_struct.hf_import import main

configure_logging()
sys.exit(main())
