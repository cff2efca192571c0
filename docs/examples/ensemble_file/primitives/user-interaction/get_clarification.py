# docs/examples/ensemble_file/primitives/user-interaction/get_clarification.py
"""Answers the analyzer's question without a person (input injected for tests and demos)."""

import json
import sys

envelope = json.load(sys.stdin)
question = envelope["context"].get("question", "what the rows mean")
print(json.dumps({"clarification_provided": True, "clarification": f"About {question}: rows are sales per day."}))
