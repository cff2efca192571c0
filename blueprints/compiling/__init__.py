"""Compiling a loaded blueprint into core's steps: a Pipeline whose steps hold only ready-to-call objects.

Read in this order: ``compiler`` (``compile_pipeline`` and ``StepCompiler``: one step kind after another),
``base`` (what every step's compiler uses, so the loop's and the ensemble's need not import the compiler),
``loops`` and ``ensembles`` (the loop, map and ensemble kinds), ``loop_hooks`` (what a loop runs: init,
propagation, output), ``predicates`` (exit and branch functions), ``agents`` (each agent built once),
``persona`` (the simulated person of ``--simulate-user``).
It imports the rooms below it (``schema``, ``reading``, ``checking``), never the explainer or the wizard.
"""
