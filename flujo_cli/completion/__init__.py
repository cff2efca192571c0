"""Shell completion for bash, zsh and fish: ``flujo completion SHELL`` prints the script, ``--install`` (or ``flujo
--install-completion``) puts it where the shell loads it.

Read in this order: ``values`` (what the project offers: run ids, thread names, agents, steps; attached to the
parameters in ``flujo_cli.main``), ``shells`` (the scripts and the protocol they speak with ``flujo``),
``blueprint_agents`` (a blueprint's agents, read quickly), ``install`` (where each shell loads a script from).

A completion starts ``flujo`` once per TAB: it must stay quick. ``flujo_cli.main.main`` answers it before
anything else, and nothing it runs imports the engine, pydantic or the async stores (a test checks).
"""
