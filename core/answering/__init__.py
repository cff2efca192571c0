"""Who answers a run's questions besides the person: ``order`` (``Answering``: given answers, then an earlier
run's recorded answers, then a simulated person, then the person), ``replay`` (an earlier run's answers),
``simulated_person`` (an agent that plays the person).

Below the steps (a hitl step or an ensemble participant holds its simulated person, ``answered_by``) and
above the ports and context; it imports nothing of the conversation.
"""
