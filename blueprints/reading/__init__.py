"""Reading a blueprint file: its YAML into plain data, with the place (file:line:col) of every key and value.

Read in this order: ``positions`` (the {path: place} index), ``findings`` (what is said about a place),
``yaml_source`` (the one place YAML is parsed), ``ensemble_file`` (the ensemble file format, read as a
blueprint), ``suggestions`` (did-you-mean). What is at a path that is not a file, in words, is
``core.settings.file_kinds``.
It imports nothing of blueprints: only core.
"""
