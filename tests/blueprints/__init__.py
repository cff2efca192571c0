"""Tests of blueprints: reading YAML, findings and checks (``flujo validate``), compiling, explaining in
words, scaffolding."""
