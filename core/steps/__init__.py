"""The step model core executes: ``kinds`` (every kind of step, the pipeline, and the lists of kinds derived
from them), then ``paths`` (how a step execution is named in the run: ``chat/3/clarify``).
"""
