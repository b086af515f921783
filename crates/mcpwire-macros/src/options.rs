//! The arguments of `#[tool(...)]`, `#[prompt(...)]`, `#[resource(...)]` and `#[server(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::{Parse, ParseStream, Parser};
use syn::{LitBool, LitStr, Path};

/// Which attribute is being read (for messages and allowed arguments).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Tool,
    Prompt,
    Resource,
}

impl Kind {
    pub fn attr(self) -> &'static str {
        match self {
            Kind::Tool => "#[tool]",
            Kind::Prompt => "#[prompt]",
            Kind::Resource => "#[resource]",
        }
    }

    fn allowed(self) -> &'static [&'static str] {
        match self {
            Kind::Tool => &[
                "name",
                "description",
                "title",
                "read_only",
                "destructive",
                "idempotent",
                "open_world",
                "task_support",
                "crate",
            ],
            Kind::Prompt => &["name", "description", "title", "crate"],
            Kind::Resource => &["uri", "name", "description", "title", "mime", "crate"],
        }
    }

    pub fn of_ident(name: &str) -> Option<Kind> {
        match name {
            "tool" => Some(Kind::Tool),
            "prompt" => Some(Kind::Prompt),
            "resource" => Some(Kind::Resource),
            _ => None,
        }
    }
}

/// Parsed attribute arguments; which fields are set depends on the [`Kind`].
#[derive(Default)]
pub struct Options {
    pub name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub title: Option<LitStr>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    pub task_support: Option<LitStr>,
    pub uri: Option<LitStr>,
    pub mime: Option<LitStr>,
    pub krate: Option<Path>,
}

/// `true` for a bare flag, else the `= bool` given.
fn flag(meta: &ParseNestedMeta) -> syn::Result<bool> {
    if meta.input.peek(syn::Token![=]) {
        Ok(meta.value()?.parse::<LitBool>()?.value)
    } else {
        Ok(true)
    }
}

/// `crate = "path"` or `crate = path`.
pub fn crate_path(meta: &ParseNestedMeta) -> syn::Result<Path> {
    let v = meta.value()?;
    if v.peek(LitStr) {
        v.parse::<LitStr>()?.parse()
    } else {
        v.parse()
    }
}

/// The closest allowed argument to `got`, if any is close.
fn suggest(got: &str, allowed: &[&str]) -> Option<String> {
    let norm = |s: &str| s.replace('_', "").to_lowercase();
    allowed
        .iter()
        .find(|a| norm(a) == norm(got) || a.starts_with(got) || got.starts_with(*a))
        .map(|a| (*a).to_owned())
}

impl Options {
    /// Parses `tokens` (the attribute's arguments) as a `kind` attribute.
    pub fn parse(kind: Kind, tokens: TokenStream) -> syn::Result<Options> {
        let mut o = Options::default();
        let parser = |input: ParseStream| -> syn::Result<()> {
            if kind == Kind::Resource && input.peek(LitStr) {
                o.uri = Some(input.parse()?);
                if input.is_empty() {
                    return Ok(());
                }
                input.parse::<syn::Token![,]>()?;
            }
            let rest: TokenStream = input.parse()?;
            syn::meta::parser(|meta| o.one(kind, meta)).parse2(rest)
        };
        parser.parse2(tokens)?;
        Ok(o)
    }

    fn one(&mut self, kind: Kind, meta: ParseNestedMeta) -> syn::Result<()> {
        let name = meta
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        if !kind.allowed().contains(&name.as_str()) {
            let mut msg = format!("unknown {} argument `{name}`", kind.attr());
            if let Some(s) = suggest(&name, kind.allowed()) {
                msg.push_str(&format!(": did you mean `{s}`?"));
            }
            msg.push_str(&format!(
                " (expected one of: {})",
                kind.allowed().join(", ")
            ));
            return Err(meta.error(msg));
        }
        match name.as_str() {
            "name" => self.name = Some(meta.value()?.parse()?),
            "description" => self.description = Some(meta.value()?.parse()?),
            "title" => self.title = Some(meta.value()?.parse()?),
            "read_only" => self.read_only = Some(flag(&meta)?),
            "destructive" => self.destructive = Some(flag(&meta)?),
            "idempotent" => self.idempotent = Some(flag(&meta)?),
            "open_world" => self.open_world = Some(flag(&meta)?),
            "task_support" => {
                let v: LitStr = meta.value()?.parse()?;
                if !["forbidden", "optional", "required"].contains(&v.value().as_str()) {
                    return Err(syn::Error::new(
                        v.span(),
                        "task_support is \"forbidden\", \"optional\" or \"required\"",
                    ));
                }
                self.task_support = Some(v);
            }
            "uri" => self.uri = Some(meta.value()?.parse()?),
            "mime" => self.mime = Some(meta.value()?.parse()?),
            "crate" => self.krate = Some(crate_path(&meta)?),
            _ => {}
        }
        Ok(())
    }
}

/// The arguments of `#[server(...)]`: only `crate = path`.
pub struct ServerOptions {
    pub krate: Option<Path>,
}

impl Parse for ServerOptions {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut krate = None;
        let rest: TokenStream = input.parse()?;
        syn::meta::parser(|meta| {
            if meta.path.is_ident("crate") {
                krate = Some(crate_path(&meta)?);
                Ok(())
            } else {
                Err(meta.error(
                    "unknown #[server] argument (expected `crate = path`); tool, prompt and \
                     resource options go on their own attributes inside the impl block",
                ))
            }
        })
        .parse2(rest)?;
        Ok(ServerOptions { krate })
    }
}

/// The path of the crate whose `__private` module the generated code calls.
pub fn krate(path: Option<&Path>) -> TokenStream {
    match path {
        Some(p) => quote::quote!(#p),
        None => quote::quote!(::mcpwire),
    }
}

/// A string literal with the call site's span.
pub fn lit(s: &str) -> LitStr {
    LitStr::new(s, Span::call_site())
}
