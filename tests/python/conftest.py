"""Shared fixtures: where the mcpwire binary is and how to start it as a stdio server."""

import os
import pathlib

import pytest
from mcp.client.stdio import StdioServerParameters

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def mcpwire_bin() -> str:
    path = os.environ.get("MCPWIRE_BIN", str(ROOT / "target" / "debug" / "mcpwire"))
    if not os.path.exists(path):
        pytest.fail(f"mcpwire binary not found at {path}; run `cargo build -p mcpwire` first")
    return path


@pytest.fixture()
def demo(mcpwire_bin) -> StdioServerParameters:
    return StdioServerParameters(command=mcpwire_bin, args=["demo"], env={"MCPWIRE_LOG": "warn"})


@pytest.fixture
def anyio_backend():
    return "asyncio"
