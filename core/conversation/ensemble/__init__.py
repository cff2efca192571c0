"""Ensembles: a conversation among agents and the person, run in rounds (``kind: ensemble``).

The step itself (``EnsembleStep``, ``Participant``, ``Dependency``) is one of the step kinds, in
``core.steps.kinds``. Here: the round rules (``state``: ``EnsembleState``, who is ready, what a round adds),
then what each participant is sent (``view``: ``chat``, ``envelope``) and the agent that sends it (``speaker``:
``Speaker``). The step policy that plays
the rounds, as leaf steps of the run, is ``core.policies.ensemble``; it reaches these through
``core.conversation``.
"""
