//! Variables in an imported servers file: `${env:NAME}` and `${NAME}` (with
//! `${NAME:-default}`) from the gateway's environment, `${userHome}`, `${workspaceFolder}`
//! (the folder holding `.vscode/` or `.cursor/`, else the file's folder). `${input:…}`
//! asks the user in VS Code; a gateway cannot, so it is refused, as is any other `${…}`.
//! A variable that is not set is refused (not left empty), naming it.

use std::path::{Path, PathBuf};

/// What the variables of one file expand to.
pub(super) struct Vars {
    workspace: PathBuf,
}

impl Vars {
    /// The variables of the file at `path`.
    pub(super) fn for_file(path: &Path) -> Vars {
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let hidden = dir
            .file_name()
            .is_some_and(|n| n == ".vscode" || n == ".cursor");
        let workspace = match dir.parent() {
            Some(up) if hidden => up.to_path_buf(),
            _ => dir,
        };
        Vars { workspace }
    }

    /// `${workspaceFolder}`, which relative `cwd`s are relative to.
    pub(super) fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// `text` with its variables replaced.
    pub(super) fn expand(&self, text: &str) -> Result<String, String> {
        self.expand_with(text, |name| std::env::var(name).ok())
    }

    fn expand_with(
        &self,
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| format!("`{text}`: `${{` without its `}}`"))?;
            let var = &after[..end];
            out.push_str(&self.value(var, &env)?);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn value(&self, var: &str, env: &impl Fn(&str) -> Option<String>) -> Result<String, String> {
        let unset =
            |name: &str| format!("`${{{var}}}`: the environment variable {name} is not set");
        if let Some(name) = var.strip_prefix("env:") {
            return env(name).ok_or_else(|| unset(name));
        }
        match var {
            "userHome" => return env("HOME").ok_or_else(|| unset("HOME")),
            "workspaceFolder" => return Ok(self.workspace.display().to_string()),
            "pathSeparator" => return Ok("/".into()),
            _ => {}
        }
        if var.starts_with("input:") {
            return Err(format!(
                "`${{{var}}}` asks the user for a value, which the gateway cannot: put the value \
                 in an environment variable and write ${{env:NAME}}"
            ));
        }
        let (name, default) = match var.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (var, None),
        };
        let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !plain {
            return Err(format!("`${{{var}}}` is not a variable mcpwire knows"));
        }
        env(name)
            .or_else(|| default.map(str::to_owned))
            .ok_or_else(|| unset(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables() {
        let vars = Vars::for_file(Path::new("/w/proj/.vscode/mcp.json"));
        assert_eq!(vars.workspace(), Path::new("/w/proj"));
        assert_eq!(
            Vars::for_file(Path::new("/home/u/claude.json")).workspace(),
            Path::new("/home/u")
        );
        let env = |n: &str| (n == "TOKEN" || n == "HOME").then(|| format!("<{n}>"));
        let x = |s: &str| vars.expand_with(s, env);
        assert_eq!(
            x("Bearer ${env:TOKEN} ${TOKEN} ${userHome}").unwrap(),
            "Bearer <TOKEN> <TOKEN> <HOME>"
        );
        assert_eq!(x("${workspaceFolder}/data").unwrap(), "/w/proj/data");
        assert_eq!(x("${MISSING:-d}").unwrap(), "d");
        assert!(
            x("${env:MISSING}")
                .unwrap_err()
                .contains("MISSING is not set")
        );
        assert!(x("${input:token}").unwrap_err().contains("asks the user"));
        assert!(x("${a b}").unwrap_err().contains("not a variable"));
        assert!(x("${open").is_err());
        assert_eq!(x("plain $HOME").unwrap(), "plain $HOME");
    }
}
