//! `jwt_fixture DIR AUDIENCE`: writes `DIR/jwks.json` (fresh RS256, ES256 and EdDSA keys) and
//! prints an RS256 bearer token for `AUDIENCE` (subject `bench`, scope `mcp`, valid 1 hour),
//! for `bench/overhead.sh`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use jsonwebtoken::Algorithm;
use mcpwire_bench::jwt_fixture::JwtFixture;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().context("usage: jwt_fixture DIR AUDIENCE")?);
    let audience = args.next().context("usage: jwt_fixture DIR AUDIENCE")?;
    let f = JwtFixture::new();
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("jwks.json"), f.jwks().to_string())?;
    println!(
        "{}",
        f.token(Algorithm::RS256, &audience, "bench", "mcp", 3600)
    );
    Ok(())
}
