"""Using a trained translation model.

- `translate`: the fairseq-struct translate command line (raw text in, plain text out);
- `translator`: checkpoints, task and beam search put together as fairseq-interactive does;
- `source_lines`: raw input lines read, checked and cut as the model can take them;
- `average_checkpoints`: the fairseq-struct average-checkpoints command line, with
  `checkpoint_selection` choosing the last or best checkpoints of a run.
"""
