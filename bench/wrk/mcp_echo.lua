-- wrk script: `tools/call` of the `echo` tool over Streamable HTTP, one JSON-RPC request per
-- HTTP request (bench/http_vs_rmcp_wrk.sh). Stateless (2026-07-28, no arguments given to the
-- script) or stateful (the session ids as arguments: requests take them round-robin, each
-- with an id no other in-flight request has). Every answer is checked: HTTP 200 carrying
-- the echoed text; failures are counted and printed at the end ("failed N").
local sessions = {}
local threads = {}
local counter = 0
index, failed = 0, 0
local stride = 64
local text = "hello from wrk"

function setup(thread)
  thread:set("index", #threads)
  table.insert(threads, thread)
end

function init(args)
  for _, s in ipairs(args) do
    table.insert(sessions, s)
  end
  index = tonumber(index) or 0
end

local stateless_body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
  .. '"arguments":{"text":"' .. text .. '"},"_meta":{'
  .. '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"},'
  .. '"io.modelcontextprotocol/clientCapabilities":{}}}}'

function request()
  counter = counter + 1
  if #sessions == 0 then
    return wrk.format("POST", "/mcp", {
      ["Content-Type"] = "application/json",
      ["Accept"] = "application/json, text/event-stream",
      ["Mcp-Protocol-Version"] = "2026-07-28",
      ["Mcp-Method"] = "tools/call",
      ["Mcp-Name"] = "echo",
    }, stateless_body)
  end
  local id = counter * stride + index
  local body = '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"echo",'
    .. '"arguments":{"text":"' .. text .. '"}}}'
  return wrk.format("POST", "/mcp", {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["Mcp-Protocol-Version"] = "2025-11-25",
    ["Mcp-Session-Id"] = sessions[counter % #sessions + 1],
  }, body)
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, text, 1, true) then
    failed = failed + 1
  end
end

function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do
    total = total + (tonumber(t:get("failed")) or 0)
  end
  io.write(string.format("completed %d failed %d p50_us %d p99_us %d\n",
    summary.requests, total, latency:percentile(50), latency:percentile(99)))
end
