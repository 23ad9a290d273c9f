"""Writes the real inspect_ai logs in tests/fixtures/inspect_ai/inspect-0.3.285_mockllm_tool_events*: a
tool-using task run against inspect's own `mockllm/model` with scripted outputs (no network, no key);
one call succeeds, one raises a ToolError. inspect-ai is not a dependency of this project: run it in a
venv of its own (`pip install inspect-ai==0.3.285`), `python scripts/make_inspect_fixture.py OUT_DIR json|eval`."""

import sys

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ToolError, tool


@tool
def add():
    async def execute(x: int, y: int):
        """Add two numbers.

        Args:
            x: First number to add.
            y: Second number to add.
        """
        return x + y

    return execute


@tool
def read_file():
    async def execute(path: str):
        """Read a file.

        Args:
            path: The file to read.
        """
        raise ToolError(f"no such file: {path}")

    return execute


outputs = [
    ModelOutput.for_tool_call("mockllm/model", "add", {"x": 1, "y": 1}, tool_call_id="call_add_1"),
    ModelOutput.for_tool_call("mockllm/model", "read_file", {"path": "notes.txt"}, tool_call_id="call_read_1"),
    ModelOutput.from_content("mockllm/model", "The answer is 2."),
]
for out, (tin, tout) in zip(outputs, [(120, 20), (160, 25), (190, 8)], strict=True):
    out.usage = ModelUsage(
        input_tokens=tin, output_tokens=tout, total_tokens=tin + tout
    )  # mockllm counts with tiktoken otherwise (a download)
task = Task(
    dataset=[Sample(input="What is 1 + 1? Then read notes.txt.", target="2")],
    solver=[use_tools([add(), read_file()]), generate()],
    scorer=includes(),
)
logs = inspect_eval(
    task,
    model=get_model("mockllm/model", custom_outputs=outputs),
    log_dir=sys.argv[1],
    log_format=sys.argv[2] if len(sys.argv) > 2 else "json",
    display="none",
)
print(logs[0].location, logs[0].status)
