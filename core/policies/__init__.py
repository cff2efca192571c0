"""How each kind of step runs: ``dispatch`` (which policy runs a step), ``frame`` (what every policy shares:
the run's store, limits, journal and reporter), the leaf policies (``leaf``, ``person``), then the policies of
the steps that run steps (``loop``, ``map``, ``parallel``, ``conditional``, ``workflow``, ``ensemble``).
"""
