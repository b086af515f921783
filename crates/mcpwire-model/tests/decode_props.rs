//! Property tests: the decoder never panics, always classifies, and round-trips what the
//! encoder writes.

use mcpwire_model::jsonrpc::{decode, decode_with_depth};
use mcpwire_model::{Message, Outbound, RequestId, codes, to_raw};
use proptest::prelude::*;

fn valid_request() -> impl Strategy<Value = Vec<u8>> {
    (any::<i32>(), "[a-z/]{1,20}", "[ -~]{0,40}").prop_map(|(id, method, text)| {
        serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": {"text": text}
        }))
        .unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Err(m) = decode(&bytes) {
            prop_assert!(m.error.code == codes::PARSE_ERROR || m.error.code == codes::INVALID_REQUEST);
        }
    }

    #[test]
    fn mutated_requests_never_panic(mut bytes in valid_request(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        for (at, b) in flips {
            let i = at % bytes.len();
            bytes[i] = b;
        }
        let _ = decode(&bytes);
    }

    #[test]
    fn truncated_requests_are_errors(bytes in valid_request(), cut in any::<usize>()) {
        let cut = cut % bytes.len();
        prop_assert!(decode(&bytes[..cut]).is_err());
    }

    #[test]
    fn deep_nesting_is_refused(depth in 65usize..5000) {
        let s = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{}{}}}",
            "[".repeat(depth), "]".repeat(depth));
        let e = decode_with_depth(s.as_bytes(), 64).unwrap_err();
        prop_assert_eq!(e.error.code, codes::PARSE_ERROR);
    }

    #[test]
    fn responses_round_trip(id in any::<i64>(), text in "\\PC{0,64}") {
        let out = Outbound::Response { id: RequestId::Int(id), result: to_raw(&serde_json::json!({"text": text})) };
        match decode(out.to_json_string().as_bytes()) {
            Ok(Message::Response(r)) => {
                prop_assert_eq!(r.id, RequestId::Int(id));
                let v: serde_json::Value = serde_json::from_str(r.outcome.unwrap().get()).unwrap();
                prop_assert_eq!(v["text"].as_str().unwrap(), text.as_str());
            }
            other => prop_assert!(false, "{other:?}"),
        }
    }
}
