"""Getting memories in and out: JSONL records, our own export, other tools' stores."""
