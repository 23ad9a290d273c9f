"""The MCP server: the answers of answers.py as tools, runs as resources, and two prompts.

One server for both transports. Who calls is an `Actor`: over HTTP the API token's (read from the
request the SDK hands each tool, checked against the configured tokens), over stdio the CLI's
(`AGENT_REPLAY_CLI_ROLE`). Each tool checks the role
its action needs, runs its database work in a worker thread (the app's event loop never waits on
it), and is written to the audit log with its name (`mcp:<tool>`), refusals included.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import Field

from .. import config
from ..storage.actor import READ, REPLAY, SHARE, WORK_QUEUE, Actor, PermissionDenied, local
from ..storage.filters import SessionFilter
from ..storage.store import Store
from . import actions, answers
from .answers import Answer, AnswerError

RunId = Annotated[str, Field(description="A run's id, as search_runs lists it.", min_length=1, max_length=500)]
MaxChars = Annotated[
    int | None,
    Field(description=f"Most characters of text to answer (default {answers.DEFAULT_CHARS:,}; up to {answers.MAX_CHARS:,})."),
]
INSTRUCTIONS = """Agent Replay holds recorded runs of AI agents as numbered steps (seq).
Start with search_runs (e.g. status="failed"), then get_run for a run's story, explain_failure for why
it failed (no model is asked: the answer comes from the recorded steps), get_state_at_step for what the
agent saw at a step, get_steps for a window of steps, compare_runs for the first divergence between two
runs, and find_similar_failures for runs that failed the same way. Answers are bounded; each says how to
ask for more."""


def _parse_time(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise AnswerError(f"{name}: expected an ISO date or time such as 2026-12-01, got {value!r}") from None


ActorOf = Callable[[Any], Actor | None]  # the HTTP request a call came in → who is calling (None: no valid token)


def build(store_of: Callable[[], Store], actor_of: ActorOf | None = None) -> MCPServer:
    """The server over the Store `store_of()` returns. `actor_of` names the caller of an HTTP request;
    a call without one (stdio) is the local user in the CLI's role."""
    server = MCPServer("agent-replay", instructions=INSTRUCTIONS, log_level="WARNING")

    def caller(ctx: Context) -> Actor:
        request = ctx.request_context.request
        if request is None:
            return local("mcp")
        actor = actor_of(request) if actor_of is not None else None
        if actor is None:
            raise ToolError("no valid API token on this request (Authorization: Bearer <token>)")
        return actor

    async def answer(
        ctx: Context, tool: str, action: str, target: str | None, work: Callable[[Store, Actor], Answer]
    ) -> CallToolResult:
        actor = caller(ctx)
        store = store_of()

        def run() -> Answer:
            if not actor.may(action):  # refused before any work, in the log under the tool's name
                store.record_audit(actor, f"mcp:{tool}", outcome="denied", target=target, detail={"tool": tool})
                actor.require(action)
            result = work(store, actor)
            store.record_audit(actor, f"mcp:{tool}", target=target, detail={"tool": tool, "chars": len(result.text)})
            return result

        try:
            result = await anyio.to_thread.run_sync(run)
        except (AnswerError, PermissionDenied) as exc:
            raise ToolError(str(exc)) from None
        return CallToolResult(content=[TextContent(type="text", text=result.text)], structured_content=result.data)

    @server.tool(description="Find runs: by status, agent, model, workflow, version, time range and text; newest first, paged.")
    async def search_runs(
        ctx: Context,
        status: Annotated[str | None, Field(description="running, succeeded, failed, incomplete or unknown")] = None,
        agent: str | None = None,
        model: str | None = None,
        workflow: str | None = None,
        version: Annotated[str | None, Field(description="The agent's version (agent_version).")] = None,
        since: Annotated[str | None, Field(description="ISO date or time: runs started at or after it.")] = None,
        until: Annotated[str | None, Field(description="ISO date or time: runs started before it.")] = None,
        query: Annotated[str | None, Field(description="Text in the run's name or steps.", max_length=500)] = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        offset: Annotated[int, Field(ge=0)] = 0,
        max_chars: MaxChars = None,
    ) -> CallToolResult:
        def work(store: Store, _actor: Actor) -> Answer:
            from ..events import SessionStatus

            if status is not None and status not in set(SessionStatus):
                raise AnswerError(f"status: expected one of {', '.join(SessionStatus)}, got {status!r}")
            flt = SessionFilter(
                status=status,
                agent_id=agent,
                model=model,
                workflow=workflow,
                agent_version=version,
                since=_parse_time(since, "since"),
                until=_parse_time(until, "until"),
                text=query,
            )
            return answers.search_runs(store, flt, limit=limit, offset=offset, max_chars=max_chars)

        return await answer(ctx, "search_runs", READ, None, work)

    @server.tool(description="One run: what it was asked, what it did, how it ended and why, totals, structure, first steps.")
    async def get_run(
        ctx: Context, run_id: RunId, first_steps: Annotated[int, Field(ge=0, le=500)] = 20, max_chars: MaxChars = None
    ) -> CallToolResult:
        return await answer(
            ctx, "get_run", READ, run_id, lambda s, _a: answers.get_run(s, run_id, first_steps=first_steps, max_chars=max_chars)
        )

    @server.tool(description="A window of a run's steps (from `start`, or around step `around`), or the steps holding `query`.")
    async def get_steps(
        ctx: Context,
        run_id: RunId,
        start: Annotated[int | None, Field(ge=0, description="First step (seq) of the window.")] = None,
        around: Annotated[int | None, Field(ge=0, description="Centre the window on this step (seq).")] = None,
        count: Annotated[int, Field(ge=1, le=500)] = 40,
        query: Annotated[str | None, Field(max_length=500)] = None,
        content_chars: Annotated[
            int, Field(ge=100, le=answers.MAX_CHARS, description="Most characters of each step's content (default 1,000).")
        ] = 1_000,
        max_chars: MaxChars = None,
    ) -> CallToolResult:
        return await answer(
            ctx,
            "get_steps",
            READ,
            run_id,
            lambda s, _a: answers.get_steps(
                s, run_id, start=start, around=around, count=count, query=query, max_chars=max_chars, content_chars=content_chars
            ),
        )

    @server.tool(
        description="What the agent had in front of it at a step: its context messages (with where each came from), "
        "running totals, goal and memory."
    )
    async def get_state_at_step(
        ctx: Context, run_id: RunId, step: Annotated[int, Field(ge=0)], max_chars: MaxChars = None
    ) -> CallToolResult:
        return await answer(
            ctx, "get_state_at_step", READ, run_id, lambda s, _a: answers.state_at_step(s, run_id, step, max_chars=max_chars)
        )

    @server.tool(
        description="Why a failed, incomplete or unknown-outcome run failed: turning point, causal chain, contradictions. "
        "No model is asked."
    )
    async def explain_failure(ctx: Context, run_id: RunId, max_chars: MaxChars = None) -> CallToolResult:
        return await answer(
            ctx, "explain_failure", READ, run_id, lambda s, _a: answers.explain_failure(s, run_id, max_chars=max_chars)
        )

    @server.tool(description="Compare two runs step by step: the first divergence in a sentence, the differing steps, totals.")
    async def compare_runs(ctx: Context, run_a: RunId, run_b: RunId, max_chars: MaxChars = None) -> CallToolResult:
        return await answer(
            ctx,
            "compare_runs",
            READ,
            f"{run_a} vs {run_b}",
            lambda s, _a: answers.compare_runs(s, run_a, run_b, max_chars=max_chars),
        )

    @server.tool(description="Runs of the same workflow that failed the same way as this one (same turning point or error).")
    async def find_similar_failures(
        ctx: Context, run_id: RunId, limit: Annotated[int, Field(ge=1, le=200)] = 20, max_chars: MaxChars = None
    ) -> CallToolResult:
        return await answer(
            ctx,
            "find_similar_failures",
            READ,
            run_id,
            lambda s, _a: answers.similar_failures(s, run_id, limit=limit, max_chars=max_chars),
        )

    _action_tools(server, answer)
    _resources_and_prompts(server, answer)
    return server


def _action_tools(server: MCPServer, answer: Callable[..., Any]) -> None:
    """Tools that spend or change: replays and experiments (editors), verdicts (reviewers), share links (editors).
    The actor each acts as is the caller `answer` checked (`a`), never a name in the arguments."""

    @server.tool(
        description="Replay a run from a step (to a step) with another model or system prompt, recorded tool results reused. "
        "Editors only. The estimate is checked against budget_usd first; the model's credentials (or api_base) must be set up."
    )
    async def replay_from_step(
        ctx: Context,
        run_id: RunId,
        model: Annotated[str, Field(description="A litellm model string (openai/gpt-4o-mini…) or 'recorded'.", max_length=200)],
        budget_usd: Annotated[float, Field(description="Most dollars this replay may spend; required.")],
        from_step: Annotated[int | None, Field(ge=0)] = None,
        to_step: Annotated[int | None, Field(ge=0)] = None,
        api_base: Annotated[str | None, Field(description="An OpenAI-compatible server's address.", max_length=500)] = None,
        system_prompt: Annotated[str | None, Field(max_length=50_000)] = None,
        max_chars: MaxChars = None,
    ) -> CallToolResult:
        return await answer(
            ctx,
            "replay_from_step",
            REPLAY,
            run_id,
            lambda s, a: actions.replay_from_step(
                s,
                a,
                run_id,
                from_step=from_step,
                to_step=to_step,
                model=model,
                api_base=api_base,
                system_prompt=system_prompt,
                budget_usd=budget_usd,
                max_chars=max_chars,
            ),
        )

    @server.tool(
        description="Run a dataset's cases with other models and score them. Editors only; budget_usd required; every model "
        "must be ready. Waits up to wait_seconds for the result, else answers with the experiment id for get_experiment."
    )
    async def run_experiment(
        ctx: Context,
        dataset: Annotated[str, Field(min_length=1, max_length=200)],
        models: Annotated[list[Annotated[str, Field(max_length=200)]], Field(min_length=1, max_length=10)],
        budget_usd: Annotated[float, Field(description="Most dollars the whole experiment may spend; required.")],
        api_base: Annotated[str | None, Field(max_length=500)] = None,
        wait_seconds: Annotated[float, Field(ge=0, le=300)] = 30.0,
        max_chars: MaxChars = None,
    ) -> CallToolResult:
        return await answer(
            ctx,
            "run_experiment",
            REPLAY,
            f"dataset {dataset}",
            lambda s, a: actions.run_experiment(
                s, a, dataset, models, api_base=api_base, budget_usd=budget_usd, wait_seconds=wait_seconds, max_chars=max_chars
            ),
        )

    @server.tool(description="An experiment's status and each model's pass rate and cost so far.")
    async def get_experiment(
        ctx: Context, experiment_id: Annotated[str, Field(min_length=1, max_length=200)], max_chars: MaxChars = None
    ) -> CallToolResult:
        return await answer(
            ctx,
            "get_experiment",
            READ,
            experiment_id,
            lambda s, a: actions.experiment_status(s, experiment_id, max_chars=max_chars),
        )

    @server.tool(description="Hold the next run of a review queue for you (reviewers). You are who your token says.")
    async def review_queue_next(
        ctx: Context, queue_id: Annotated[int, Field(ge=1)], max_chars: MaxChars = None
    ) -> CallToolResult:
        return await answer(
            ctx,
            "review_queue_next",
            WORK_QUEUE,
            f"queue {queue_id}",
            lambda s, a: actions.review_next(s, a, queue_id, max_chars=max_chars),
        )

    @server.tool(
        description="Your verdict on a queue item you hold (reviewers): a verdict, criteria, a note, what it should have done."
    )
    async def submit_verdict(
        ctx: Context,
        queue_id: Annotated[int, Field(ge=1)],
        item_id: Annotated[int, Field(ge=1)],
        verdict: Annotated[str, Field(description="One of the queue's verdicts (review_queue_next lists them).", max_length=200)],
        criteria: Annotated[
            dict[str, str] | None, Field(description="The rubric's criteria, each 'pass' or 'fail'.", max_length=50)
        ] = None,
        note: Annotated[str | None, Field(max_length=5_000)] = None,
        should_have: Annotated[str | None, Field(description="What the agent should have done.", max_length=5_000)] = None,
    ) -> CallToolResult:
        return await answer(
            ctx,
            "submit_verdict",
            WORK_QUEUE,
            f"queue {queue_id} item {item_id}",
            lambda s, a: actions.submit_verdict(
                s, a, queue_id, item_id, verdict, criteria=criteria, note=note, should_have=should_have
            ),
        )

    @server.tool(description="A read-only, expiring link to one run, or to the comparison of two (editors).")
    async def create_share_link(
        ctx: Context,
        run_id: RunId,
        other_run_id: Annotated[str | None, Field(max_length=500)] = None,
        expires: Annotated[str | None, Field(description="e.g. 7d, 12h (default 7 days)", max_length=20)] = None,
    ) -> CallToolResult:
        return await answer(
            ctx,
            "create_share_link",
            SHARE,
            run_id,
            lambda s, a: actions.share_link(s, a, run_id, other_run_id, expires, config.public_url()),
        )


def _resources_and_prompts(server: MCPServer, answer: Callable[..., Any]) -> None:
    """Runs and steps readable as resources; prompts for the two questions asked most."""

    async def text_of(ctx: Context, tool: str, target: str, work: Callable[[Store, Actor], Answer]) -> str:
        result = await answer(ctx, tool, READ, target, work)
        return result.content[0].text

    @server.resource("agent-replay://runs/{run_id}", mime_type="text/plain", description="A run: header, totals, first steps.")
    async def run_resource(run_id: str, ctx: Context) -> str:
        return await text_of(
            ctx, "resource:run", run_id, lambda s, _a: answers.get_run(s, run_id, first_steps=20, max_chars=None)
        )

    @server.resource(
        "agent-replay://runs/{run_id}/steps/{step}", mime_type="text/plain", description="The state of a run at one step."
    )
    async def step_resource(run_id: str, step: str, ctx: Context) -> str:
        if not step.isdigit():
            raise ToolError(f"step: expected a step number, got {step!r}")
        return await text_of(
            ctx, "resource:step", run_id, lambda s, _a: answers.state_at_step(s, run_id, int(step), max_chars=None)
        )

    @server.prompt(description="Find out why a failed run failed, from its recorded steps.")
    def debug_failed_run(run_id: str) -> str:
        return (
            f"Run {run_id} did not succeed. Call explain_failure with run_id={run_id!r}; then get_state_at_step at the "
            "head of its causal chain to see what the agent saw there; then find_similar_failures. Answer in plain words: "
            "what went wrong first, what followed from it, and the step numbers that show it."
        )

    @server.prompt(description="Compare a run with the last run of its workflow that succeeded.")
    def compare_with_last_good(run_id: str) -> str:
        return (
            f"Call get_run with run_id={run_id!r} to learn its workflow, then search_runs with status='succeeded' and that "
            f"workflow (limit=1) for the last good run, then compare_runs with run_a=<that run> and run_b={run_id!r}. "
            "Say where they first differ and what the agent did differently there."
        )
