# docs/examples/customer.py — a command tool: the arguments as JSON on stdin, the result as JSON on stdout.
import json
import sys

arguments = json.load(sys.stdin)
print(json.dumps({"id": arguments["id"], "name": "Ada Lovelace", "plan": "pro"}))
