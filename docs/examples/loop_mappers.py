# docs/examples/loop_mappers.py — the Python mapper that output_mapping_before.yaml calls.
def shape_result(output, context):
    return {
        "draft": output["draft"],
        "score": output["score"],
        "request": context["initial_prompt"],
        "reviewed": False,
    }
