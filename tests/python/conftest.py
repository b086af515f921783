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


def spawn_http_demo(mcpwire_bin, extra=(), env=None):
    """Starts `mcpwire demo --transport http --port 0 EXTRA…`; the process and its URL."""
    proc = subprocess.Popen(
        [mcpwire_bin, "demo", "--transport", "http", "--port", "0", *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={"MCPWIRE_LOG": "warn", **(env or {})},
        text=True,
    )
    line = proc.stderr.readline()
    assert "listening on" in line, line
    # Keep draining stderr so the server never blocks on a full pipe.
    threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
    return proc, line.split()[-1]


@pytest.fixture()
def http_url(mcpwire_bin):
    """Starts `mcpwire demo` on a free port and yields its endpoint URL."""
    proc, url = spawn_http_demo(mcpwire_bin)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=5)
