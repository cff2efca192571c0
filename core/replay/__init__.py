"""A recorded run served back to a new run of the blueprint (``flujo run --replay RUN_ID``, ``flujo test``):
``recording`` (what a run's journal recorded of its agent calls, tool calls and answers, masked as lens shows
them; from a store or a case file), ``replayer`` (``Replay``: each call of the new run compared with the
recorded one at its step path, served when equal; the first that differs stops the run or goes live),
``diffs`` (a unified diff of two prompts, or of two tool calls).

Above the answering room (a replay serves the recorded answers too) and below the policies, which ask it
before each call.
"""
