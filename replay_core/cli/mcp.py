"""`agent-replay mcp`: the MCP server over stdio, for Claude Code, Codex CLI, Cursor or any MCP client
started on this machine. It acts as the CLI's role (AGENT_REPLAY_CLI_ROLE, editor by default)."""

import typer

from .options import DbOption, cli_actor, open_store

commands = typer.Typer()


@commands.command("mcp")
def mcp_cmd(db: DbOption = None) -> None:
    """Serve the MCP tools (search runs, state at a step, why a run failed, compare, replay…) over stdio."""
    from ..mcp.server import build

    cli_actor()  # an unknown AGENT_REPLAY_CLI_ROLE is refused before the client connects
    store = open_store(db)
    build(lambda: store).run("stdio")
