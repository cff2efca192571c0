# docs/examples/notes_server.py — a small MCP server (the official SDK) that docs/examples/mcp_tools.yaml starts.
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("notes")
NOTES = {"42": "Ada prefers email.", "7": "Call before noon."}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_note(customer: str) -> str:
    """The note kept on a customer."""
    return NOTES.get(customer, "no note")


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_note(customer: str) -> str:
    """Delete the note kept on a customer."""
    NOTES.pop(customer, None)
    return "deleted"


if __name__ == "__main__":
    server.run()
