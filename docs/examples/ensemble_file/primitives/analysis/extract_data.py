# docs/examples/ensemble_file/primitives/analysis/extract_data.py
"""An ensemble script participant: reads one JSON object on stdin, writes its reply as JSON on stdout."""

import json
import sys

envelope = json.load(sys.stdin)  # {"input", "context", "history", "turn", "agent", "config"}
batch = envelope["context"].get("batches", 0) + 1
print(json.dumps({"batches": batch, "rows": [batch * 10, batch * 20]}))
