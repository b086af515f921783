"""Shared fixtures: where the mcpwire binary is and how to start it as a stdio server."""

import os
import pathlib
import subprocess
import threading

import pytest
from mcp.client.stdio import StdioServerParameters

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def mcpwire_bin() -> str:
    path = os.environ.get("MCPWIRE_BIN", str(ROOT / "target" / "debug" / "mcpwire"))
    if not os.path.exists(path):
        pytest.fail(f"mcpwire binary not found at {path}; run `cargo build -p mcpwire-cli` first")
    return path


@pytest.fixture()
def demo(mcpwire_bin) -> StdioServerParameters:
    return StdioServerParameters(command=mcpwire_bin, args=["demo"], env={"MCPWIRE_LOG": "warn"})


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture()
def http_url(mcpwire_bin):
    """Starts `mcpwire demo` on a free port and yields its endpoint URL."""
    proc = subprocess.Popen(
        [mcpwire_bin, "demo", "--transport", "http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={"MCPWIRE_LOG": "warn"},
        text=True,
    )
    line = proc.stderr.readline()
    assert "listening on" in line, line
    url = line.split()[-1]
    # Keep draining stderr so the server never blocks on a full pipe.
    threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=5)
