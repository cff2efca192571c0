"""Answers the analyzer's question without a person (ADR-005's input injection for tests and demos)."""

import json
import sys

envelope = json.load(sys.stdin)
question = envelope["context"].get("question", "what the rows mean")
print(json.dumps({"clarification_provided": True, "clarification": f"About {question}: rows are sales per day."}))
