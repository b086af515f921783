//! Test vectors for `json_frame`: a table of frames with what the scan must say of each
//! (members read, a plain call, a plain result, or nothing), every claim checked against
//! serde by the shared oracle, and families generated from the table — every truncation,
//! invalid UTF-8 in every string, oversize in depth, members and id length.

#[path = "support/json_frame_oracle.rs"]
mod oracle;

use mcpwire_model::RequestId;
use mcpwire_wire::json_frame::{self, IdText, MAX_MEMBERS, MAX_NESTING};
use oracle::{Claims, check, check_request_line};

/// The depth the table is read with.
const DEPTH: usize = 8;

/// What the scan must say of a frame.
enum Expect {
    /// Not read at all (not an object the scan reads).
    Unread,
    /// Read, with these keys in order, but neither a plain call nor a plain result.
    Members(&'static [&'static str]),
    /// A plain call: its id text, tool and arguments.
    Call(&'static str, &'static str, Option<&'static str>),
    /// A plain result with this id.
    Result(u64),
}

use Expect::{Call, Members, Result, Unread};

const CALL_KEYS: &[&str] = &["jsonrpc", "id", "method", "params"];

#[rustfmt::skip]
const VECTORS: &[(&str, &str, Expect)] = &[
    // Plain calls: whitespace, member order, ids.
    ("compact call", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#, Call("1", "echo", Some(r#"{"text":"hi"}"#))),
    ("spaced call", " {\t\"jsonrpc\" : \"2.0\" , \"id\" : 7 , \"method\" : \"tools/call\" , \"params\" : { \"name\" : \"echo\" , \"arguments\" : { } } }\r\n", Call("7", "echo", Some("{ }"))),
    // A line break inside would split the frame on a line-framed upstream.
    ("call with a line break inside", " {\t\"jsonrpc\" : \"2.0\" ,\r\n \"id\" : 7 , \"method\" : \"tools/call\" , \"params\" : { \"name\" : \"echo\" } }", Members(CALL_KEYS)),
    ("members in any order", r#"{"params":{"arguments":{},"name":"e"},"id":"a-1","method":"tools/call","jsonrpc":"2.0"}"#, Call(r#""a-1""#, "e", Some("{}"))),
    ("no arguments", r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"t"}}"#, Call("0", "t", None)),
    ("negative id", r#"{"jsonrpc":"2.0","id":-5,"method":"tools/call","params":{"name":"t"}}"#, Call("-5", "t", None)),
    ("largest id", r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"tools/call","params":{"name":"t"}}"#, Call("9223372036854775807", "t", None)),
    ("smallest id", r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"tools/call","params":{"name":"t"}}"#, Call("-9223372036854775808", "t", None)),
    ("string id with unicode", r#"{"jsonrpc":"2.0","id":"é-ü","method":"tools/call","params":{"name":"t"}}"#, Call(r#""é-ü""#, "t", None)),
    ("40-byte id", r#"{"jsonrpc":"2.0","id":"01234567890123456789012345678901234567","method":"tools/call","params":{"name":"t"}}"#, Call(r#""01234567890123456789012345678901234567""#, "t", None)),
    ("unicode tool", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"café"}}"#, Call("1", "café", None)),
    // Arguments: escapes, braces and quotes in strings, nesting, keys that look like ours.
    ("string escapes in arguments", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"t":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"}}}"#, Call("1", "e", Some(r#"{"t":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"}"#))),
    ("braces and quotes in strings", r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"e","arguments":{"t":"} ] { [ \" \"id\":9 }"}}}"#, Call("2", "e", Some(r#"{"t":"} ] { [ \" \"id\":9 }"}"#))),
    ("nested arguments", r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"e","arguments":{"a":[1,-2.5e-3,true,false,null,{"b":[[],{}]}],"id":{"id":"x"}}}}"#, Call("3", "e", Some(r#"{"a":[1,-2.5e-3,true,false,null,{"b":[[],{}]}],"id":{"id":"x"}}"#))),
    ("escaped and repeated keys deep inside", r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"e","arguments":{"\u0061":1,"a":2,"a":3}}}"#, Call("4", "e", Some(r#"{"\u0061":1,"a":2,"a":3}"#))),
    ("huge number kept raw", r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"e","arguments":{"n":1e999}}}"#, Call("5", "e", Some(r#"{"n":1e999}"#))),
    ("lone surrogate escape in arguments", r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"e","arguments":{"t":"\ud800"}}}"#, Call("6", "e", Some(r#"{"t":"\ud800"}"#))),
    // Calls that are not plain (read, then the general path).
    ("null id", r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("float id", r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("exponent id", r#"{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("minus zero id", r#"{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("id beyond i64", r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"tools/call","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("escaped string id", r#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("41-byte id", r#"{"jsonrpc":"2.0","id":"012345678901234567890123456789012345678","method":"tools/call","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("object id", r#"{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("escaped tool", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e\u0063"}}"#, Members(CALL_KEYS)),
    ("numeric tool", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}"#, Members(CALL_KEYS)),
    ("_meta in params", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1}}}"#, Members(CALL_KEYS)),
    ("null arguments", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":null}}"#, Members(CALL_KEYS)),
    ("array arguments", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":[]}}"#, Members(CALL_KEYS)),
    ("repeated name", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","name":"u"}}"#, Members(CALL_KEYS)),
    ("escaped key in params", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"t"}}"#, Members(CALL_KEYS)),
    ("array params", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["t",{}]}"#, Members(CALL_KEYS)),
    ("other method", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("escaped method", r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("jsonrpc 1.0", r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}"#, Members(CALL_KEYS)),
    ("no params", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#, Members(&["jsonrpc", "id", "method"])),
    ("extra member", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"x":1}"#, Members(&["jsonrpc", "id", "method", "params", "x"])),
    ("notification", r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#, Members(&["jsonrpc", "method", "params"])),
    // Results.
    ("plain result", r#"{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"a\"}"}]}}"#, Result(12)),
    ("result first, spaced", " { \"result\" : [ ] , \"id\" : 0 , \"jsonrpc\" : \"2.0\" } ", Result(0)),
    ("result id at u64::MAX", r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":null}"#, Result(u64::MAX)),
    ("error answer", r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}"#, Members(&["jsonrpc", "id", "error"])),
    ("string result id", r#"{"jsonrpc":"2.0","id":"1","result":{}}"#, Members(&["jsonrpc", "id", "result"])),
    ("negative result id", r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#, Members(&["jsonrpc", "id", "result"])),
    ("result id beyond u64", r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}"#, Members(&["jsonrpc", "id", "result"])),
    ("result with _meta", r#"{"jsonrpc":"2.0","id":1,"result":{},"_meta":{}}"#, Members(&["jsonrpc", "id", "result", "_meta"])),
    // Not read at all.
    ("repeated id", r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"t"}}"#, Unread),
    ("escaped top-level key", r#"{"jsonrpc":"2.0","\u0069d":1,"method":"tools/call","params":{"name":"t"}}"#, Unread),
    ("array frame", r#"["2.0",1,"tools/call",{"name":"t"}]"#, Unread),
    ("scalar frame", "1", Unread),
    ("empty", "", Unread),
    ("only whitespace", " \n", Unread),
    ("two objects", r#"{"id":1}{"id":2}"#, Unread),
    ("trailing garbage", r#"{"id":1} x"#, Unread),
    ("trailing comma", r#"{"id":1,}"#, Unread),
    ("unquoted key", r#"{id:1}"#, Unread),
    ("single quotes", r#"{'id':1}"#, Unread),
    ("bad escape", r#"{"a":"\x","id":1}"#, Unread),
    ("short unicode escape", r#"{"a":"\u12","id":1}"#, Unread),
    ("raw tab in string", "{\"a\":\"\t\",\"id\":1}", Unread),
    ("leading zero", r#"{"id":01}"#, Unread),
    ("bare minus", r#"{"id":-}"#, Unread),
    ("plus sign", r#"{"id":+1}"#, Unread),
    ("dot without digits", r#"{"id":1.}"#, Unread),
    ("NaN", r#"{"id":NaN}"#, Unread),
    ("true misspelt", r#"{"id":tru}"#, Unread),
    ("mismatched brackets", r#"{"a":[1}],"id":1}"#, Unread),
    ("comment", r#"{"id":1 /* c */}"#, Unread),
    ("NUL between members", "{\"id\":1,\u{0}\"a\":2}", Unread),
    ("byte order mark", "\u{feff}{\"id\":1}", Unread),
    // Members only.
    ("empty object", "{}", Members(&[])),
    ("ids elsewhere", r#"{"params":{"id":1,"arguments":{"id":[{"id":2}]}},"method":"m","id":9}"#, Members(&["params", "method", "id"])),
];

fn expected_claims(expect: &Expect) -> Claims {
    let owned = |keys: &[&str]| Some(keys.iter().map(|k| (*k).to_owned()).collect());
    match expect {
        Unread => Claims::default(),
        Members(keys) => Claims {
            members: owned(keys),
            ..Claims::default()
        },
        Call(id, tool, arguments) => Claims {
            members: None, // the order varies: compared sorted
            call: Some((
                (*id).to_owned(),
                (*tool).to_owned(),
                arguments.map(str::to_owned),
            )),
            result: None,
        },
        Result(id) => Claims {
            members: None, // the order varies: compared sorted
            call: None,
            result: Some(*id),
        },
    }
}

#[test]
fn every_vector_reads_as_expected_and_serde_agrees() {
    for (name, frame, expect) in VECTORS {
        let got = check(frame.as_bytes(), DEPTH);
        let mut want = expected_claims(expect);
        // A call's or result's members may come in any order.
        let sorted = |keys: &Option<Vec<String>>| {
            let mut keys = keys.clone().unwrap_or_default();
            keys.sort();
            keys
        };
        match expect {
            Call(..) => assert_eq!(sorted(&got.members), ["id", "jsonrpc", "method", "params"]),
            Result(_) => assert_eq!(sorted(&got.members), ["id", "jsonrpc", "result"]),
            _ => {}
        }
        if let Call(..) | Result(_) = expect {
            want.members = got.members.clone();
        }
        assert_eq!(got, want, "{name}: {frame}");
    }
}

#[test]
fn a_frame_cut_anywhere_is_not_read() {
    for (name, frame, expect) in VECTORS {
        if matches!(expect, Unread) {
            continue;
        }
        let bytes = frame.as_bytes();
        // Where the object ends: a cut after it (in trailing whitespace) still reads.
        let end = bytes.iter().rposition(|b| *b == b'}').map_or(0, |i| i + 1);
        for cut in 0..bytes.len() {
            let got = check(&bytes[..cut], DEPTH);
            if cut < end {
                assert_eq!(got, Claims::default(), "{name} cut at {cut}");
            }
        }
    }
}

#[test]
fn invalid_utf8_anywhere_is_not_read() {
    for (name, frame, expect) in VECTORS {
        if matches!(expect, Unread) {
            continue;
        }
        let bytes = frame.as_bytes();
        for at in 0..bytes.len() {
            for bad in [
                &[0xff][..],
                &[0xc3],
                &[0xed, 0xa0, 0x80],
                &[0xc0, 0xaf],
                &[0x80],
            ] {
                let mut broken = bytes[..at].to_vec();
                broken.extend_from_slice(bad);
                broken.extend_from_slice(&bytes[at..]);
                assert_eq!(
                    check(&broken, DEPTH),
                    Claims::default(),
                    "{name} with {bad:x?} at {at}"
                );
            }
        }
    }
}

/// `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":X}}`
/// with `X` an object nesting `depth - 3` deep (the frame itself at depth `depth`).
fn call_nesting(depth: usize) -> String {
    let inner = depth - 2; // the frame and params
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{}{}}}}}"#,
        r#"{"a":["#.repeat(inner / 2) + if inner % 2 == 1 { "{" } else { "" },
        if inner % 2 == 1 { "}" } else { "" }.to_owned() + &"]}".repeat(inner / 2)
    )
}

#[test]
fn nesting_is_read_up_to_the_depth_asked_for_and_the_cap() {
    for depth in [3, 4, 5, 8, 9, 64, MAX_NESTING] {
        let frame = call_nesting(depth);
        assert!(
            serde_json::from_str::<&serde_json::value::RawValue>(&frame).is_ok(),
            "{frame}"
        );
        assert!(check(frame.as_bytes(), depth).call.is_some(), "at {depth}");
        assert_eq!(
            check(frame.as_bytes(), depth - 1),
            Claims::default(),
            "over {}",
            depth - 1
        );
    }
    let frame = call_nesting(MAX_NESTING + 1);
    assert_eq!(
        check(frame.as_bytes(), usize::MAX),
        Claims::default(),
        "over the cap"
    );
    // Deep nesting costs no stack: far beyond the cap it is refused just as fast.
    let deep = format!("{{\"a\":{}", "[".repeat(1 << 20));
    assert!(json_frame::member(deep.as_bytes(), "a", usize::MAX).is_none());
}

#[test]
fn more_members_than_the_scan_holds_are_not_read() {
    let frame = |n: usize| {
        let members: Vec<String> = (0..n).map(|i| format!("\"k{i}\":{i}")).collect();
        format!("{{{}}}", members.join(","))
    };
    assert_eq!(
        check(frame(MAX_MEMBERS).as_bytes(), DEPTH)
            .members
            .map(|m| m.len()),
        Some(MAX_MEMBERS)
    );
    assert_eq!(
        check(frame(MAX_MEMBERS + 1).as_bytes(), DEPTH),
        Claims::default()
    );
}

#[test]
fn ids_up_to_the_kept_length_are_plain() {
    for len in 0..=IdText::MAX + 2 {
        let id = format!("\"{}\"", "x".repeat(len.saturating_sub(2)));
        let frame = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t"}}}}"#
        );
        let plain = check(frame.as_bytes(), DEPTH).call.is_some();
        assert_eq!(
            plain,
            id.len() <= IdText::MAX,
            "an id of {} bytes",
            id.len()
        );
    }
}

#[test]
fn long_strings_are_scanned_in_words_and_bytes_alike() {
    // Every special byte at every offset of a long string, in and around eight-byte words.
    for len in 0..40 {
        for (special, readable) in [
            ("\\\"", true),
            ("\\u0041", true),
            ("é", true),
            ("\t", false),
        ] {
            let text = format!("{}{special}{}", "a".repeat(len), "b".repeat(len % 9));
            let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"t":"{text}"}}}}"#);
            let got = check(frame.as_bytes(), DEPTH);
            assert_eq!(got.result.is_some(), readable, "{frame}");
        }
    }
}

#[test]
fn request_lines_written_directly_are_the_codecs() {
    let params = serde_json::value::RawValue::from_string(
        r#"{"name":"e","arguments":{"t":"é\n"}}"#.to_owned(),
    )
    .expect("json");
    for id in [
        RequestId::Int(0),
        RequestId::Int(i64::MIN),
        RequestId::Str("s\"\\é".into()),
    ] {
        for method in ["tools/call", "a\u{1}\"\\é\u{7f}"] {
            check_request_line(&id, method, Some(&params));
            check_request_line(&id, method, None);
        }
    }
}
