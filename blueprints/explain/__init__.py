"""``flujo explain``: what a blueprint will do, in plain words, without calling a model.

from blueprints import load_blueprint
from blueprints.explain import explain_blueprint
explanation = explain_blueprint(load_blueprint("flow.yaml"))
print(explanation.overview); json.dumps(explanation.to_json())
"""

from blueprints.explain.explainer import explain_blueprint
from blueprints.explain.model import AgentSummary, Explanation, Note, Part, StepExplanation, StepGroup

__all__ = ["AgentSummary", "Explanation", "Note", "Part", "StepExplanation", "StepGroup", "explain_blueprint"]
