"""Google's protobuf runtime as an independent reader of the descriptors mcpwire generates
from tool JSON Schemas (`mcpwire schema descriptor`): every file loads into a descriptor
pool, messages build from the tools' JSON, and the buf.validate options decode."""

import json
import subprocess

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory


def descriptor_set(mcpwire_bin, target):
    out = subprocess.run(
        [mcpwire_bin, "schema", "descriptor", target, "-o", "-"],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return descriptor_pb2.FileDescriptorSet.FromString(out.stdout)


def pool_of(fds):
    # The set is self-contained (Google's imports first), so an empty pool takes it as is.
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return pool


def message(pool, name):
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))()


def field_rules(pool, field):
    """The buf.validate.field option of a field, decoded with the FieldRules message."""
    opts = descriptor_pb2.FieldOptions.FromString(field.GetOptions().SerializeToString())
    raw = opts.SerializeToString()
    # walk the option bytes for field 1159 (length-delimited), the extension's number
    i = 0
    while i < len(raw):
        key, i = _varint(raw, i)
        num, wire = key >> 3, key & 7
        if wire == 2:
            n, i = _varint(raw, i)
            if num == 1159:
                rules = message(pool, "buf.validate.FieldRules")
                rules.ParseFromString(raw[i : i + n])
                return rules
            i += n
        elif wire == 0:
            _, i = _varint(raw, i)
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    return None


def _varint(b, i):
    shift = result = 0
    while True:
        byte = b[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7


def test_demo_server_descriptors_load_and_build(mcpwire_bin):
    fds = descriptor_set(mcpwire_bin, f"{mcpwire_bin} demo")
    names = [f.name for f in fds.file]
    assert "mcpwire/tools/add.proto" in names
    pool = pool_of(fds)
    add = message(pool, "mcpwire.tools.add.Input")
    json_format.ParseDict({"a": 2, "b": 3}, add)
    again = message(pool, "mcpwire.tools.add.Input")
    again.ParseFromString(add.SerializeToString())
    assert json_format.MessageToDict(again, preserving_proto_field_name=True) == {"a": 2.0, "b": 3.0}


def test_synthetic_catalog_of_500_tools_loads_into_one_pool(mcpwire_bin, tmp_path):
    catalog = subprocess.run(
        [mcpwire_bin, "schema", "synthetic", "500"], capture_output=True, check=True, timeout=60
    ).stdout
    path = tmp_path / "catalog.json"
    path.write_bytes(catalog)
    tools = json.loads(catalog)["tools"]
    fds = descriptor_set(mcpwire_bin, str(path))
    pool = pool_of(fds)
    assert sum(1 for f in fds.file if f.name.startswith("mcpwire/tools/")) == 500
    for t in tools:
        pool.FindMessageTypeByName(f"mcpwire.tools.{t['name']}.Input")
        if "outputSchema" in t:
            pool.FindMessageTypeByName(f"mcpwire.tools.{t['name']}.Output")

    search = next(t for t in tools if t["name"].endswith("_search_issue"))
    desc = pool.FindMessageTypeByName(f"mcpwire.tools.{search['name']}.Input")
    rules = field_rules(pool, desc.fields_by_name["query"])
    assert rules is not None and rules.required and rules.string.min_len == 1
    limit = field_rules(pool, desc.fields_by_name["limit"])
    assert limit.int64.gte == 1 and limit.int64.lte == 50
    # a message built from the tool's own JSON arguments
    msg = message(pool, desc.full_name)
    json_format.ParseDict({"query": "crash", "limit": 5, "created": {"start": "2026-01-01"}}, msg)
    assert msg.HasField("limit") and msg.created.start == "2026-01-01"


def test_golden_fixture_descriptors_load(mcpwire_bin):
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "crates/mcpwire-cli/tests/schema_golden"
    fds = descriptor_set(mcpwire_bin, str(root / "unions_and_refs.json"))
    pool = pool_of(fds)
    pay = message(pool, "mcpwire.tools.send_payment.Input")
    json_format.ParseDict(
        {"amount": 5, "method": {"card": {"number": "4242"}}, "tags": {"k": "v"}, "metadata": {"x": [1, None]}},
        pay,
    )
    assert pay.method.WhichOneof("value") == "card"
    ren = pool.FindMessageTypeByName("mcpwire.tools.rename.Input")
    assert ren.fields_by_name["f_2fa"].json_name == "2fa"
    assert [v.name for v in ren.enum_types_by_name["Mode"].values][:2] == ["MODE_UNSPECIFIED", "MODE_FAST"]
