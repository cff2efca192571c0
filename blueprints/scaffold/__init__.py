"""``flujo create``: the questions, their answers, and the blueprint written from them.

from blueprints.scaffold import render_blueprint, resolve
answers = resolve({"purpose": "plan a trip", "human": True})   # flags; defaults for the rest
text = render_blueprint(answers, file="plan_a_trip.yaml")
"""

from blueprints.scaffold.answers import ScaffoldError, WizardAnswers
from blueprints.scaffold.questions import QUESTIONS, Question, parse_answer, resolve, slug
from blueprints.scaffold.render import render_blueprint

__all__ = [
    "QUESTIONS",
    "Question",
    "ScaffoldError",
    "WizardAnswers",
    "parse_answer",
    "render_blueprint",
    "resolve",
    "slug",
]
