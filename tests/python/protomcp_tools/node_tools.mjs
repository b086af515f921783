// A protomcp tool process in JavaScript with no dependencies: it speaks the Envelope protocol
// (`[u32 BE length][Envelope]` over $PROTOMCP_SOCKET) with a hand-written protobuf codec for
// the few messages it uses. `mcpwire run node_tools.mjs` starts it with `node` (the npm
// `protomcp` SDK is not published on the registry, so this stands in for a Node peer).
//
// Tools: `shout(text)` (upper-cases, reporting progress when asked), `divide(a, b)` (a
// ToolError with a suggestion when b is 0), `roots()` (asks the client for its roots with a
// ListRootsRequest and lists them).
import net from "node:net";

// --- protobuf wire format: just what these messages need ---
const varint = (n) => {
  const out = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
};
const field = (no, wire, body) => Buffer.concat([varint((no << 3) | wire), body]);
const bytes = (no, buf) => field(no, 2, Buffer.concat([varint(buf.length), buf]));
const str = (no, s) => (s ? bytes(no, Buffer.from(s, "utf8")) : Buffer.alloc(0));
const bool = (no, b) => (b ? field(no, 0, varint(1)) : Buffer.alloc(0));
const int = (no, n) => (n ? field(no, 0, varint(n)) : Buffer.alloc(0));

// Every (field, value) in order, repeated fields included.
function decodeAll(buf) {
  const fields = [];
  let i = 0;
  const readVarint = () => {
    let v = 0n, shift = 0n;
    for (;;) {
      if (i >= buf.length) throw new Error("truncated varint");
      const b = buf[i++];
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(readVarint());
    const [no, wire] = [key >> 3, key & 7];
    let value;
    if (wire === 0) value = readVarint();
    else if (wire === 2) {
      const len = Number(readVarint());
      value = buf.subarray(i, i + len);
      i += len;
    } else if (wire === 1) { value = buf.subarray(i, i + 8); i += 8; }
    else if (wire === 5) { value = buf.subarray(i, i + 4); i += 4; }
    else throw new Error(`unsupported wire type ${wire}`);
    fields.push([no, value]);
  }
  return fields;
}
// The last value of each field.
const decode = (buf) => new Map(decodeAll(buf));
const text = (f, no) => (f.get(no) ? Buffer.from(f.get(no)).toString("utf8") : "");

// Envelope field numbers (request_id = 14) and the oneof members used here.
const ENV = {
  listTools: 2, callTool: 3, reloadResponse: 4, toolList: 5, callResult: 6, progress: 16,
  listResources: 31, resourceList: 32, listTemplates: 33, templateList: 34,
  listPrompts: 40, promptList: 41, listRoots: 62, rootsList: 63,
};
const envelope = (member, body, requestId = "") => Buffer.concat([bytes(member, body), str(14, requestId)]);

// --- the tools ---
const TOOLS = [
  { name: "shout", description: "Upper-cases text", schema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
  { name: "divide", description: "Divides a by b", schema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] } },
  { name: "roots", description: "Lists the client's roots", schema: { type: "object", properties: {} } },
];
const content = (t) => JSON.stringify([{ type: "text", text: t }]);

// Asks the host for the client's roots; the answer is matched by request id.
const asks = new Map();
let nextAsk = 0;
function listRoots() {
  const id = `roots-${++nextAsk}`;
  return new Promise((resolve) => {
    asks.set(id, resolve);
    send(envelope(ENV.listRoots, Buffer.alloc(0), id));
  });
}

async function call(name, args, progressToken) {
  if (name === "roots") {
    const reply = await listRoots();
    const uris = [];
    for (const [no, value] of reply) if (no === 1) uris.push(text(decode(value), 1));
    return str(2, content(uris.join(" ")));
  }
  if (name === "shout") {
    if (progressToken) {
      for (const step of [1, 2]) {
        send(envelope(ENV.progress, Buffer.concat([str(1, progressToken), int(2, step), int(3, 2), str(4, `step ${step}`)])));
      }
    }
    return str(2, content(String(args.text).toUpperCase()));
  }
  if (name === "divide") {
    if (args.b === 0) {
      const err = Buffer.concat([str(1, "DIVISION_BY_ZERO"), str(2, "cannot divide by zero"), str(3, "pass a non-zero b"), bool(4, false)]);
      return Buffer.concat([bool(1, true), str(2, content("cannot divide by zero")), bytes(5, err)]);
    }
    return str(2, content(String(args.a / args.b)));
  }
  return Buffer.concat([bool(1, true), str(2, content(`unknown tool ${name}`))]);
}

// --- the connection ---
const sock = net.createConnection(process.env.PROTOMCP_SOCKET);
const send = (body) => {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  sock.write(Buffer.concat([len, body]));
};

function onEnvelope(f) {
  const requestId = text(f, 14);
  if (f.has(ENV.listTools)) {
    const defs = TOOLS.map((t) => bytes(1, Buffer.concat([str(1, t.name), str(2, t.description), str(3, JSON.stringify(t.schema))])));
    send(envelope(ENV.toolList, Buffer.concat(defs), requestId));
    send(envelope(ENV.reloadResponse, bool(1, true)));
  } else if (f.has(ENV.callTool)) {
    const c = decode(f.get(ENV.callTool));
    call(text(c, 1), JSON.parse(text(c, 2) || "{}"), text(c, 3)).then((result) =>
      send(envelope(ENV.callResult, result, requestId)),
    );
  } else if (f.has(ENV.rootsList)) {
    asks.get(requestId)?.(decodeAll(f.get(ENV.rootsList)));
    asks.delete(requestId);
  } else if (f.has(ENV.listResources)) send(envelope(ENV.resourceList, Buffer.alloc(0), requestId));
  else if (f.has(ENV.listTemplates)) send(envelope(ENV.templateList, Buffer.alloc(0), requestId));
  else if (f.has(ENV.listPrompts)) send(envelope(ENV.promptList, Buffer.alloc(0), requestId));
}

let pending = Buffer.alloc(0);
sock.on("data", (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  while (pending.length >= 4) {
    const len = pending.readUInt32BE(0);
    if (pending.length < 4 + len) break;
    const frame = pending.subarray(4, 4 + len);
    pending = pending.subarray(4 + len);
    if (len > 0) onEnvelope(decode(frame));
  }
});
sock.on("close", () => process.exit(0));
