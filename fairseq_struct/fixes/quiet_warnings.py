"""Silence the warnings fairseq 0.12 makes a run print that its user cannot act on.

Each filter matches one message of fairseq's own code (its Hydra 1.0-era configuration calls,
the DataLoader it always asks to pin memory, torch's renamed autocast) and nothing else, so a
warning about the user's own options or data still shows.
"""

import warnings

# (category, the start of the message, as `warnings.filterwarnings` matches it)
FAIRSEQ_WARNINGS = (
    # fairseq.dataclass.initialize / utils: Hydra's experimental API and `strict=`.
    (UserWarning, r"hydra\.experimental\.(initialize|compose)\(\) is no longer experimental"),
    (UserWarning, r"\s*The strict flag in the compose API is deprecated"),
    (UserWarning, r"\s*The version_base parameter is not specified"),
    (UserWarning, r"\s*'config' is validated against ConfigStore schema with the same name"),
    # fairseq/config/*.yaml start with Hydra 1.0's `# @package _group_` header.
    (UserWarning, r"In '[^']*': Usage of deprecated keyword in package header"),
    # fairseq's iterators pass pin_memory=True whatever the device.
    (UserWarning, r"'pin_memory' argument is set as true but no accelerator is found"),
    # fairseq_task.train_step's `torch.cuda.amp.autocast(enabled=...)`.
    (FutureWarning, r"`torch\.cuda\.amp\.autocast\(args\.\.\.\)` is deprecated"),
)


def silence_fairseq_warnings() -> None:
    for category, message in FAIRSEQ_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)


silence_fairseq_warnings()
