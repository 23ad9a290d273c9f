"""The layout's rules, read from the code: each wing imports only the ground floor and the wings
below it on the data's way, no module imports another in a cycle, the SDK's parts never import
the recorder, screens never reach into storage internals, and `import replay_core` stays light.

Every import counts, including those inside functions (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "replay_core"

GROUND = {"vocabulary", "events", "config"}
# wing → the wings it may import (besides itself and the ground floor)
ALLOWED = {
    "storage": set(),
    "media": {"storage"},
    "ingest": {"storage", "media"},
    "understand": {"storage", "ingest", "media"},
    "whatif": {"storage", "ingest", "understand", "media"},
    "sdk": {"storage", "ingest", "media"},
    "team": {"storage", "ingest"},  # review notes are redacted like the runs they quote
    "mcp": {"storage", "understand", "whatif", "team"},
    "monitors": {"storage", "understand", "whatif", "team"},
    "server": {"storage", "ingest", "understand", "whatif", "team", "media", "mcp", "monitors"},
}
TOP = {"cli", "demo", ""}  # the package face and the thin shells over everything


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Absolute names of the replay_core modules (or packages) `path` imports."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not (target == "replay_core" or target.startswith("replay_core.")):
                continue
            for alias in node.names:  # `from pkg import module` names a module
                candidate = f"{target}.{alias.name}"
                found.add(candidate if _exists(candidate) else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("replay_core"))
    found.discard(name)
    return found


def _exists(module: str) -> bool:
    rel = Path(*module.split("."))
    return (REPO / rel).with_suffix(".py").exists() or (REPO / rel / "__init__.py").exists()


def wing_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def graph() -> dict[str, set[str]]:
    return {module: set(deps) for module, deps in _graph(REPO, PACKAGE).items()}


@functools.cache
def _graph(repo: Path, package: Path) -> dict[str, set[str]]:
    """The package's import graph, parsed once per test process (every module of it: seconds), for the
    tests that check it; `repo` keys it with `package` because a test points both at a fake tree."""
    return {module_name(p): imports_of(p) for p in sorted(package.rglob("*.py"))}


def test_ground_floor_imports_only_the_ground_floor():
    g = graph()
    floor = {f"replay_core.{ground}" for ground in GROUND}
    for ground in GROUND:
        assert g[f"replay_core.{ground}"] <= floor, f"{ground} must import nothing of replay_core but the ground floor"


def test_wings_import_only_below_them():
    bad = []
    for module, deps in graph().items():
        wing = wing_of(module)
        if wing in TOP or wing in GROUND:
            continue
        assert wing in ALLOWED, f"{module}: wing {wing!r} has no rule in docs/architecture.md and this test"
        for dep in deps:
            target = wing_of(dep)
            if target in GROUND or target == wing or target in ALLOWED[wing]:
                continue
            bad.append(f"{module} imports {dep} ({wing} may not import {target or 'the package face'})")
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    g = graph()
    # a package's __init__ is a module too: importing pkg.mod runs pkg first, but pkg need not
    # import mod, so only explicit edges count
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(g.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(" → ".join(stack[stack.index(dep) :] + [dep]))
            elif dep in g and dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in g:
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_sdk_parts_do_not_import_the_recorder():
    for module, deps in graph().items():
        if module.startswith("replay_core.sdk.") and module != "replay_core.sdk.recorder":
            assert "replay_core.sdk.recorder" not in deps, f"{module} imports the recorder"


def test_screens_stay_out_of_storage_internals():
    bad = []
    for path in [REPO / "streamlit_app.py", *sorted((REPO / "pages").glob("*.py")), *sorted((REPO / "ui").glob("*.py"))]:
        for dep in imports_of(path):
            if dep.startswith(("replay_core.storage.tables", "replay_core.storage.migrations")):
                bad.append(f"{path.relative_to(REPO)} imports {dep}")
    assert not bad, "\n".join(bad)


def test_the_top_of_the_package_lists_only_wings_and_a_handful_of_files():
    files = sorted(p.name for p in PACKAGE.glob("*.py"))
    wings = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert files == ["__init__.py", "config.py", "demo.py", "events.py", "vocabulary.py"]
    assert set(wings) <= set(ALLOWED) | {"cli"}
    for wing in wings:
        assert ast.get_docstring(ast.parse((PACKAGE / wing / "__init__.py").read_text())), f"{wing}/__init__ needs its docstring"


MAX_MODULE_LINES = 800


def long_modules(root: Path) -> list[str]:
    """The repository's Python files (tracked ones: no virtualenv, no build output) longer than the limit."""
    listed = subprocess.run(["git", "ls-files", "*.py"], capture_output=True, text=True, check=True, cwd=root).stdout.split()
    lengths = {name: len((root / name).read_text().splitlines()) for name in listed if (root / name).exists()}
    return sorted(f"{name}: {n} lines" for name, n in lengths.items() if n > MAX_MODULE_LINES)


def test_no_module_passes_800_lines():
    """A module that long holds more than one job: split it along its own seams."""
    assert not long_modules(REPO)


def test_a_long_module_is_caught(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    assert long_modules(tmp_path) == [f"long.py: {MAX_MODULE_LINES + 1} lines"]


def test_the_package_face_is_lazy():
    probe = (
        "import sys, replay_core; heavy = [m for m in ('sqlalchemy', 'litellm', 'polars', 'pydantic', 'streamlit')"
        " if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize(
    "name", ["Recorder", "open_store", "Store", "import_file", "open_timeline", "state_at", "compare", "replay"]
)
def test_public_names_resolve(name):
    import replay_core

    assert getattr(replay_core, name) is not None
    assert name in dir(replay_core)


def test_a_broken_rule_is_caught(tmp_path, monkeypatch):
    """The checker itself can fail: a storage module importing the what-if wing is reported."""
    fake = tmp_path / "replay_core" / "storage"
    fake.mkdir(parents=True)
    (tmp_path / "replay_core" / "__init__.py").write_text("")
    (fake / "__init__.py").write_text('"""x"""')
    (fake / "bad.py").write_text("from ..whatif.replay import replay\n")
    (tmp_path / "replay_core" / "whatif").mkdir()
    (tmp_path / "replay_core" / "whatif" / "__init__.py").write_text("")
    (tmp_path / "replay_core" / "whatif" / "replay.py").write_text("from ..storage import bad\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "replay_core")
    with pytest.raises(AssertionError, match="storage may not import whatif"):
        test_wings_import_only_below_them()
    with pytest.raises(AssertionError, match="import cycles"):
        test_no_import_cycles()
