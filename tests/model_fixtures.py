"""Fixtures for pages that call a model: no provider configured at all, or the scripted OpenAI-compatible
server on 127.0.0.1 as the only one (`openai/fake-model`)."""

from __future__ import annotations

import pytest
from openai_server import OpenAIServer

from replay_core.whatif.replay_config import PROVIDER_KEYS


@pytest.fixture
def no_provider(monkeypatch):
    for name in (*PROVIDER_KEYS, "AGENT_REPLAY_API_BASE", "AGENT_REPLAY_MODELS", "AGENT_REPLAY_API_KEY_ENV"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def local_server(monkeypatch, no_provider):
    with OpenAIServer() as server:
        monkeypatch.setenv("AGENT_REPLAY_API_BASE", server.base_url)
        monkeypatch.setenv("AGENT_REPLAY_MODELS", "openai/fake-model")
        yield server
