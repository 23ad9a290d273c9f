"""The Model Context Protocol server: agents and coding assistants ask this app about recorded runs.

    answers  what each read tool answers, bounded, from the Store (nothing of MCP in it)
    actions  what the tools that spend or change answer: replay, experiment, verdict, share link
    server   the tools, resources and prompts; roles and the audit log

It knows no transport: `agent-replay mcp` serves it over stdio, server/routes/mcp.py over
streamable HTTP at /mcp behind the API tokens.
"""
