//! Misuse of the macros fails to compile with a message that names the fix. The expected
//! messages are in `tests/ui/*.stderr` (regenerate with `TRYBUILD=overwrite` after checking
//! that a change is intended).

#[test]
fn misuse_is_explained() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
