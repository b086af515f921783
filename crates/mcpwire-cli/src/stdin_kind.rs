//! What stdin is, for `serve` without `--listen`: stdio is only a sensible default when a
//! client can be on the other end (a pipe, a socket or a terminal). Under nohup or systemd
//! stdin is /dev/null or closed, and serving stdio would end at once, quietly.

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;

use crate::exit::UsageError;

/// Refuses to default to stdio when stdin cannot have a client on it, saying what to do.
pub fn check_default_stdio() -> Result<(), UsageError> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(());
    }
    let what = match stdin
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|f| f.metadata())
    {
        Err(_) => "closed",
        Ok(m) if m.file_type().is_fifo() || m.file_type().is_socket() => return Ok(()),
        Ok(m) if m.file_type().is_char_device() => "/dev/null (or was closed)",
        Ok(m) if m.is_file() => "a regular file",
        Ok(_) => "neither a pipe, a socket nor a terminal",
    };
    Err(UsageError(format!(
        "no --listen given, and stdin is {what}: serving MCP over stdio needs a client on \
         stdin (an MCP host starts `mcpwire serve` with pipes). Give --listen \
         http://127.0.0.1:8000/mcp (or [[listen]] in the file) to serve the network, or \
         --listen stdio to serve stdin as it is"
    )))
}
