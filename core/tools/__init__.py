"""Tools an agent's model may call: their definitions (``spec``), what runs them (one module per kind:
``python_tool``, ``command_tool``, ``mcp_tool``; the protocol is ``core.ports.Tool``), and what the tools of
one run share (``sessions``: MCP servers). The tool loop of an agent step is a policy
(``core.policies.tool_loop``); a ``workflow:`` tool runs there, as a sub-workflow step."""
