"""What `downstream.prepare` writes and reads by name: the tasks, the report file of a prepared
directory, and the encoder length used when neither the user nor an imported model gives one."""

TASKS = ("sentiment", "ner", "pos", "qa")
REPORT_FILE = "finetune.json"
DEFAULT_MAX_POSITIONS = 512
