"""The gateway console (`/ui` on the admin listener, docs/console.md) driven in a real
headless browser (Debian's chromium and chromium-driver through Selenium), in front of a
real FastMCP upstream (fixtures/console_upstream.py) and the native demo:

- log in with the admin key, see both backends up and the merged catalog;
- "view as" a key the policy lets see `up_private`, then as the anonymous caller, whom a
  rule denies it: the row turns hidden, naming the rule (`[[policy.rules]] #1`);
- run a tool from the form generated from its input schema and see the result; the
  upstream's calls, rate and latency percentiles appear in its backend row;
- a tool's elicitation is answered in a form generated from its requested schema; a
  URL-mode elicitation shows its address as text, offers it as a link (no opener, no
  referrer, never opened by itself) only when it is http(s), and is accepted or declined;
- per-backend charts (calls, errors, latency per second over the last minute);
- each listener's sessions, open connections and stateless requests, and a call's own
  listener (two listeners share the catalog);
- a credential refused by the listener shows in the live calls with its reason;
- the configuration panel shows the file with every secret masked, and after an edit of
  the file the reload's outcome (applied, then refused for a broken edit);
- a tool description made of markup is shown as text (the DOM text equals the source),
  nothing runs, and the page reported no Content-Security-Policy violation;
- a screenshot goes to docs/console.png;
- the upstream killed, its row turns down.

Under CI=1 a missing browser fails the test; elsewhere it is installed with apt-get when
that is possible, and the test is skipped otherwise."""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from test_gateway_lifecycle import Upstream, free_port
from test_gateway_serve import Served

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURE = pathlib.Path(__file__).resolve().parent / "fixtures" / "console_upstream.py"
sys.path.insert(0, str(FIXTURE.parent))
from console_upstream import TRAP  # noqa: E402

ADMIN_KEY = "console-test-admin-key"
HEADER_SECRET = "hdr-secret-123"


def browser_paths():
    chromium = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if chromium and driver:
        return chromium, driver
    if shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "chromium", "chromium-driver"],
            check=False,
            stdout=subprocess.DEVNULL,
        )
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium and driver:
        return chromium, driver
    if os.environ.get("CI") == "1":
        pytest.fail("chromium and chromium-driver are needed (apt-get install chromium chromium-driver)")
    pytest.skip("no chromium/chromedriver: apt-get install chromium chromium-driver")


@pytest.fixture()
def browser():
    chromium, driver = browser_paths()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        if os.environ.get("CI") == "1":
            pytest.fail("selenium is needed (tests/python/requirements.txt)")
        pytest.skip("selenium is not installed")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1800"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(driver), options=opts)
    try:
        yield d
    finally:
        d.quit()


def config(admin: int, port: int, other: int) -> str:
    return f"""
[[listen]]
url = "http://127.0.0.1:0/mcp"

# A second listener with the same view: both share one catalog.
[[listen]]
url = "http://127.0.0.1:{other}/other"

[admin]
listen = "127.0.0.1:{admin}"
console_keys = ["ops"]

[auth]
[[auth.api_keys]]
name = "ops"
key = "{ADMIN_KEY}"

[[auth.api_keys]]
name = "ci"
key = "ci-key"

[policy]
default = "allow"

[[policy.rules]]
effect = "deny"
anonymous = true
tools = ["up_private"]

[backends.demo]
native = "demo"

[backends.up]
url = "http://127.0.0.1:{port}/mcp"
headers = {{ "X-Test-Token" = "{HEADER_SECRET}" }}
# FastMCP asks its client only over a session (not in the 2026-07-28 era).
era = "handshake"
"""


def wait(pred, seconds=20.0, what="condition"):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            got = pred()
            if got:
                return got
        except Exception:  # noqa: BLE001 - the page is still changing
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def state_of(d, backend):
    from selenium.webdriver.common.by import By

    row = d.find_element(By.CSS_SELECTOR, f'#backends tr[data-backend="{backend}"]')
    return row.find_element(By.CSS_SELECTOR, "td.state").text


def tool_row(d, name):
    from selenium.webdriver.common.by import By

    return d.find_element(By.CSS_SELECTOR, f'#catalog tr[data-tool="{name}"]')


def test_console_end_to_end(mcpwire_bin, tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    d = browser
    port, admin, other = free_port(), free_port(), free_port()
    other_url = f"http://127.0.0.1:{other}/other"
    upstream = Upstream.__new__(Upstream)
    upstream.port = port
    upstream.proc = subprocess.Popen(
        [sys.executable, str(FIXTURE), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait(upstream.listening, 30, "the upstream")
    conf = tmp_path / "mcpwire.toml"
    conf.write_text(config(admin, port, other))
    served = Served(mcpwire_bin, conf)
    try:
        served.wait_for("mcpwire: console on")
        mcp_url = wait(lambda: next((u for u in (line.split()[-1] for line in list(served.lines)
                                                  if "listening on http://" in line) if u.endswith("/mcp")), None),
                       what="the /mcp listener")
        base = f"http://127.0.0.1:{admin}/ui"

        # Nothing without a session; the headers of every answer.
        with urllib.request.urlopen(base) as r:
            csp = r.headers["Content-Security-Policy"]
            assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
            assert r.headers["X-Content-Type-Options"] == "nosniff"
            assert ADMIN_KEY not in r.read().decode()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "/api/backends")
        assert e.value.code == 401

        d.get(base)
        d.find_element(By.ID, "secret").send_keys("wrong")
        d.find_element(By.ID, "login-button").click()
        wait(lambda: d.find_element(By.ID, "login-error").text, what="the refusal")
        d.find_element(By.ID, "secret").clear()
        d.find_element(By.ID, "secret").send_keys(ADMIN_KEY)
        d.find_element(By.ID, "login-button").click()
        wait(lambda: d.find_element(By.ID, "console").is_displayed(), what="the console")
        cookie = next(c for c in d.get_cookies() if c["name"] == "mcpwire_console")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"

        # Backends, live.
        wait(lambda: state_of(d, "demo") == "up" and state_of(d, "up") == "up", what="backends up")

        # Catalog as the key `ci`: up_private is there; as the anonymous caller it is hidden.
        Select(d.find_element(By.ID, "view-as")).select_by_value("key:ci")
        wait(lambda: "visible-item" in tool_row(d, "up_private").get_attribute("class"), what="ci sees it")
        Select(d.find_element(By.ID, "view-as")).select_by_value("anonymous")
        wait(lambda: "hidden-item" in tool_row(d, "up_private").get_attribute("class"), what="hidden")
        assert "hidden by [[policy.rules]] #1 (deny)" in tool_row(d, "up_private").text
        assert tool_row(d, "up_private").find_elements(By.CSS_SELECTOR, "button.try") == []

        # Markup in a description is text: nothing ran.
        desc = tool_row(d, "up_trap").find_element(By.CSS_SELECTOR, "td.desc")
        assert desc.text == TRAP
        assert desc.find_elements(By.CSS_SELECTOR, "img, script") == []
        assert d.title != "pwned"

        # Try a tool from its generated form.
        tool_row(d, "up_echo").find_element(By.CSS_SELECTOR, "button.try").click()
        d.find_element(By.CSS_SELECTOR, '[data-arg="text"]').send_keys("hello console")
        times = d.find_element(By.CSS_SELECTOR, '[data-arg="times"]')
        assert times.get_attribute("value") == "1", "the schema's default"
        times.clear()
        times.send_keys("2")
        d.find_element(By.CSS_SELECTOR, '[data-arg="loud"]').click()
        d.find_element(By.ID, "run").click()
        wait(lambda: "HELLO CONSOLE HELLO CONSOLE" in d.find_element(By.ID, "result").text, what="result")

        tool_row(d, "up_count").find_element(By.CSS_SELECTOR, "button.try").click()
        d.find_element(By.CSS_SELECTOR, '[data-arg="n"]').send_keys("3")
        d.find_element(By.ID, "run").click()
        wait(lambda: "counted to 3" in d.find_element(By.ID, "result").text, what="count result")
        progress = d.find_elements(By.CSS_SELECTOR, "#events li.progress-event")
        assert [p.text for p in progress] == ["progress 1 / 3", "progress 2 / 3", "progress 3 / 3"]

        # An elicitation answered in a form generated from its requested schema.
        tool_row(d, "up_book").find_element(By.CSS_SELECTOR, "button.try").click()
        d.find_element(By.ID, "run").click()
        wait(lambda: d.find_element(By.ID, "ask-panel").is_displayed(), what="the question")
        assert "how many seats" in d.find_element(By.ID, "ask-message").text
        d.find_element(By.CSS_SELECTOR, '#ask-fields [data-arg="name"]').send_keys("Ada")
        d.find_element(By.CSS_SELECTOR, '#ask-fields [data-arg="seats"]').send_keys("3")
        d.find_element(By.ID, "ask-accept").click()
        wait(lambda: "booked 3 for Ada" in d.find_element(By.ID, "result").text, what="the booking")
        assert not d.find_element(By.ID, "ask-panel").is_displayed()

        # A URL-mode elicitation: the address as text, a link that opens nothing by itself.
        windows = len(d.window_handles)
        tool_row(d, "up_connect").find_element(By.CSS_SELECTOR, "button.try").click()
        d.find_element(By.ID, "run").click()
        wait(lambda: d.find_element(By.ID, "ask-url-panel").is_displayed(), what="the URL question")
        assert "Open the page" in d.find_element(By.ID, "ask-message").text
        assert d.find_element(By.ID, "ask-url").text == "https://example.test/authorize?state=s1"
        link = d.find_element(By.ID, "ask-link")
        assert link.get_attribute("href") == "https://example.test/authorize?state=s1"
        assert link.get_attribute("rel") == "noopener noreferrer" and link.get_attribute("target") == "_blank"
        assert d.find_elements(By.CSS_SELECTOR, "#ask-fields input") == []
        assert len(d.window_handles) == windows, "nothing opened by itself"
        d.find_element(By.ID, "ask-accept").click()
        wait(lambda: "connect accept" in d.find_element(By.ID, "result").text, what="the accepted URL question")
        # An address that is no web address is shown, never offered as a link.
        tool_row(d, "up_connect").find_element(By.CSS_SELECTOR, "button.try").click()
        trap_url = "javascript:document.title='pwned'"
        d.find_element(By.CSS_SELECTOR, '[data-arg="url"]').clear()
        d.find_element(By.CSS_SELECTOR, '[data-arg="url"]').send_keys(trap_url)
        d.find_element(By.ID, "run").click()
        wait(lambda: d.find_element(By.ID, "ask-url").text == trap_url, what="the untrusted address")
        assert d.find_elements(By.ID, "ask-link") == []
        assert d.find_elements(By.CSS_SELECTOR, "#ask-url-panel a") == []
        d.find_element(By.ID, "ask-decline").click()
        wait(lambda: "connect decline" in d.find_element(By.ID, "result").text, what="the declined URL question")
        assert d.title != "pwned" and len(d.window_handles) == windows

        # Both calls are in the live list, newest first, with listener and backend.
        wait(lambda: d.find_elements(By.CSS_SELECTOR, '#calls tr[data-tool="up_count"]'), what="live call")
        echo = d.find_element(By.CSS_SELECTOR, '#calls tr[data-tool="up_echo"]')
        assert echo.find_element(By.CSS_SELECTOR, "td.listener").text == "console"
        assert echo.find_element(By.CSS_SELECTOR, "td.backend").text == "up"

        # The upstream's figures: calls, errors and latency percentiles over the last minute.
        def figures():
            row = d.find_element(By.CSS_SELECTOR, '#backends tr[data-backend="up"]')
            return row.find_element(By.CSS_SELECTOR, "td.errors").text, row.find_element(By.CSS_SELECTOR, "td.latency").text
        wait(lambda: figures()[0].startswith("0 of 5 "), what="the upstream's calls")
        assert figures()[1].count(" / ") == 2, figures()
        up_row = d.find_element(By.CSS_SELECTOR, '#backends tr[data-backend="up"]')
        assert up_row.find_element(By.CSS_SELECTOR, "td.kind").text == "upstream"
        assert up_row.find_element(By.CSS_SELECTOR, "td.era").text.startswith("20")
        assert up_row.find_element(By.CSS_SELECTOR, "td.restarts").text == "0"
        demo_row = d.find_element(By.CSS_SELECTOR, '#backends tr[data-backend="demo"]')
        assert demo_row.find_element(By.CSS_SELECTOR, "td.era").text == "in-process"

        # The upstream's own charts: its calls second by second over the last minute.
        Select(d.find_element(By.ID, "chart-backend")).select_by_value("up")
        wait(lambda: d.find_element(By.ID, "backend-charts").is_displayed(), what="the charts")
        wait(lambda: int(d.find_element(By.ID, "backend-charts").get_attribute("data-points") or 0) >= 3,
             what="the upstream's calls in its chart")
        assert d.find_elements(By.CSS_SELECTOR, "#chart-calls rect.bar-ok")
        assert d.find_elements(By.CSS_SELECTOR, "#chart-latency rect.bar-p50")
        assert d.find_elements(By.CSS_SELECTOR, "#chart-latency rect.bar-p99")
        assert d.find_elements(By.CSS_SELECTOR, "#chart-errors rect") == [], "no errors"
        assert len(d.find_elements(By.CSS_SELECTOR, "#chart-calls rect")) <= 60, "one bar a second at most"

        # A credential the listener refuses shows with its reason.
        bad = urllib.request.Request(
            mcp_url,
            data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
            headers={"Authorization": "Bearer not-a-key", "Content-Type": "application/json",
                     "Accept": "application/json, text/event-stream"},
        )
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(bad)
        assert e.value.code == 401
        wait(lambda: any(o.text.startswith("auth: ") for o in d.find_elements(By.CSS_SELECTOR, "#calls td.outcome")),
             what="the refused credential")

        # A client's session on the listener is counted, and its call is listed under
        # that listener.
        def post(body, session=None):
            h = {"Authorization": "Bearer ci-key", "Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream"}
            if session:
                h["Mcp-Session-Id"] = session
                h["MCP-Protocol-Version"] = "2025-11-25"
            with urllib.request.urlopen(urllib.request.Request(mcp_url, data=json.dumps(body).encode(), headers=h)) as r:
                return r.headers.get("Mcp-Session-Id"), r.read().decode()
        sid, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert sid
        post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        _, answer = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "up_echo", "arguments": {"text": "via listener"}}}, sid)
        assert "via listener" in answer
        def listener_cell(url, cls):
            return d.find_element(By.CSS_SELECTOR, f'#listeners tr[data-listener="{url}"] td.{cls}').text
        wait(lambda: listener_cell("http://127.0.0.1:0/mcp", "sessions") == "1", what="one session")
        assert listener_cell(other_url, "sessions") == "0"
        wait(lambda: any(r.find_element(By.CSS_SELECTOR, "td.listener").text == "http://127.0.0.1:0/mcp"
                         for r in d.find_elements(By.CSS_SELECTOR, '#calls tr[data-tool="up_echo"]')),
             what="the listener's call")

        # A stateless (2026-07-28) request on the other listener: counted there, and its
        # call names that listener alone though both share the catalog.
        stateless = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "up_echo", "arguments": {"text": "stateless call"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}
        req = urllib.request.Request(other_url, data=json.dumps(stateless).encode(), headers={
            "Authorization": "Bearer ci-key", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call", "Mcp-Name": "up_echo"})
        with urllib.request.urlopen(req) as r:
            assert "stateless call" in r.read().decode()
        wait(lambda: listener_cell(other_url, "stateless") == "1", what="the stateless request counted")
        assert listener_cell(other_url, "sessions") == "0"
        wait(lambda: any(r.find_element(By.CSS_SELECTOR, "td.listener").text == other_url
                         for r in d.find_elements(By.CSS_SELECTOR, '#calls tr[data-tool="up_echo"]')),
             what="the stateless call on its listener")
        shown = {r.find_element(By.CSS_SELECTOR, "td.listener").text
                 for r in d.find_elements(By.CSS_SELECTOR, '#calls tr[data-tool="up_echo"]')}
        assert shown == {"console", "http://127.0.0.1:0/mcp", other_url}, shown

        # Open transport connections (not sessions): two idle TCP connections, then none.
        port_of = int(mcp_url.split(":")[2].split("/")[0])
        held = [socket.create_connection(("127.0.0.1", port_of)) for _ in range(2)]
        try:
            wait(lambda: listener_cell("http://127.0.0.1:0/mcp", "connections") == "2", what="two connections")
            assert listener_cell("http://127.0.0.1:0/mcp", "sessions") == "1"
        finally:
            for c in held:
                c.close()
        wait(lambda: listener_cell("http://127.0.0.1:0/mcp", "connections") == "0", what="connections closed")

        # The configuration: every secret masked.
        text = wait(lambda: d.find_element(By.ID, "config-text").text, what="the configuration")
        assert "[backends.up]" in text and "X-Test-Token" in text
        for secret in (ADMIN_KEY, "ci-key", HEADER_SECRET):
            assert secret not in text
            assert secret not in d.page_source
        assert "none since the start" in d.find_element(By.ID, "reload").text
        listeners = d.find_element(By.ID, "listeners").text
        assert "http://127.0.0.1:0/mcp" in listeners and "required" in listeners
        d.find_element(By.ID, "calls-filter").send_keys("echo")
        wait(lambda: not d.find_elements(By.CSS_SELECTOR, '#calls tr[data-tool="up_count"]'), what="filter")

        # No CSP violation was reported by the page.
        req = urllib.request.Request(base + "/api/csp", headers={"Cookie": f"mcpwire_console={cookie['value']}"})
        with urllib.request.urlopen(req) as r:
            assert json.loads(r.read())["violations"] == []
        # A POST without the CSRF token is refused even with the session.
        post = urllib.request.Request(
            base + "/api/call",
            data=b'{"name":"up_echo","arguments":{"text":"x"}}',
            headers={"Cookie": f"mcpwire_console={cookie['value']}", "Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(post)
        assert e.value.code == 403

        # An edit of the file is applied and the panel says so; a broken one is refused.
        conf.write_text(config(admin, port, other).replace('name = "ci"', 'name = "ci"\nscopes = ["tools"]'))
        wait(lambda: "applied" in d.find_element(By.ID, "reload").text, 30, what="the reload applied")
        assert "[auth]" in d.find_element(By.ID, "reload").text
        wait(lambda: 'scopes = ["tools"]' in d.find_element(By.ID, "config-text").text, what="the new file")
        conf.write_text(config(admin, port, other).replace("[policy]", "[policy"))
        wait(lambda: "refused" in d.find_element(By.ID, "reload").text, 30, what="the reload refused")
        assert 'scopes = ["tools"]' in d.find_element(By.ID, "config-text").text, "still the applied file"

        d.execute_script("window.scrollTo(0, 0)")
        d.save_screenshot(str(ROOT / "docs" / "console.png"))

        # The upstream killed: its row turns down (pings notice it within 25 s).
        upstream.kill()
        wait(lambda: state_of(d, "up") == "down", 40, what="the upstream down")
    finally:
        served.close()
        if upstream.proc.poll() is None:
            upstream.kill()
