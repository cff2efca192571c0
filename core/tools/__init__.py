"""Tools an agent's model may call: their definitions (``spec``), what runs them (one module per kind:
``python_tool``, ``command_tool``, ``workflow_tool``, ``mcp_tool``; the protocols are ``core.ports.Tool`` and,
for an MCP server's tools, ``core.ports.ToolSource``), what the tools of one run share (``sessions``: MCP
servers), and what one step offers its model (``offered``). The tool loop of an agent step is a policy
(``core.policies.tool_loop``); a ``workflow:`` tool runs there, as a sub-workflow step."""
