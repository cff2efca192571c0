"""The settings flujo reads: ``config`` (``Settings`` and its sections, from flujo.toml and the environment),
``file`` (reading flujo.toml with positions), ``location`` (where the store and the secrets file are).
"""
