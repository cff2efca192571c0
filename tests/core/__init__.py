"""Tests of core, driven from Python: agents, tokens, settings, context, conversations, the engine, the run
stores, templates, redaction and trace events."""
