//! Attribute macros for writing MCP servers with mcpwire: `#[tool]`, `#[server]`,
//! `#[prompt]` and `#[resource]`.
//!
//! **Is:** code generation only. Each macro reads a function's signature and doc comments
//! and emits a definition built with the ordinary `mcpwire-router` API (`tool(..)`,
//! `PromptDef`, `ResourceDef`, `TemplateDef`), so a macro-made tool deserializes its
//! arguments exactly like a hand-built one.
//!
//! **Is not:** a place for behaviour. Use the macros through `mcpwire::prelude` (or
//! `mcpwire_router`); the guide is the "Write tools in Rust" section of the README and the
//! documentation of `mcpwire::prelude`.
//!
//! The generated code calls `::mcpwire::__private`; code that depends on `mcpwire-router`
//! alone writes `#[server(crate = mcpwire_router)]` / `#[tool(crate = mcpwire_router)]`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;

mod docs;
mod expand;
mod options;
mod param;
mod server;
mod template;

use expand::{Cx, Item, Owner};
use options::{Kind, Options, ServerOptions, krate};

/// Makes the methods of an `impl` block marked `#[tool]`, `#[prompt]` or `#[resource]` the
/// tools, prompts and resources of a server sharing the value (`&self`); register it with
/// `ServerBuilder::handlers`. Argument: `crate = path` (default `mcpwire`).
#[proc_macro_attribute]
pub fn server(attr: TokenStream, item: TokenStream) -> TokenStream {
    let opts = match syn::parse::<ServerOptions>(attr) {
        Ok(o) => o,
        Err(e) => return e.to_compile_error().into(),
    };
    let block = match syn::parse::<syn::ItemImpl>(item.clone()) {
        Ok(b) => b,
        Err(_) => {
            let item = proc_macro2::TokenStream::from(item);
            let e = syn::Error::new(item.span(), "#[server] goes on an `impl` block");
            return quote!(#item)
                .into_iter()
                .chain(e.to_compile_error())
                .collect::<proc_macro2::TokenStream>()
                .into();
        }
    };
    match server::expand(opts, block) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// A tool: the function's doc comment is its description, its parameters (other than an
/// optional `CallCtx`) are its arguments, described by their doc comments. On a free
/// function it adds `fn <name>_tool() -> ToolDef`; inside a `#[server]` impl block it
/// registers the method. Arguments: `name`, `description`, `title`, `read_only`,
/// `destructive`, `idempotent`, `open_world` (flags, or `= bool`), `task_support =
/// "optional" | "required"`, `crate = path`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    free(Kind::Tool, attr, item)
}

/// A prompt: its parameters (other than an optional `CallCtx`) are its arguments — `String`
/// or any `FromStr` type, optional when `Option<_>` — described by their doc comments and
/// completed with `#[complete(function)]` or `#[complete("a", "b")]`. On a free function it
/// adds `fn <name>_prompt() -> PromptDef`. Arguments: `name`, `description`, `title`,
/// `crate = path`.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    free(Kind::Prompt, attr, item)
}

/// A resource at a fixed URI (`#[resource("scheme://path")]`) or a template
/// (`#[resource("notes://{id}")]`, whose variables are the parameters, parsed with
/// `FromStr`). On a free function it adds `fn <name>_resource()` returning a `ResourceDef`
/// or `TemplateDef`. Arguments: the URI, `name`, `description`, `title`, `mime`,
/// `crate = path`.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    free(Kind::Resource, attr, item)
}

fn free(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    match free_inner(kind, attr.into(), item.clone().into()) {
        Ok(t) => t.into(),
        Err(e) => {
            let e = e.to_compile_error();
            match syn::parse::<syn::ItemFn>(item.clone()) {
                Ok(mut f) => {
                    param::strip_helpers(&mut f.sig);
                    quote!(#f #e).into()
                }
                Err(_) => {
                    let item = proc_macro2::TokenStream::from(item);
                    quote!(#item #e).into()
                }
            }
        }
    }
}

fn free_inner(
    kind: Kind,
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> syn::Result<proc_macro2::TokenStream> {
    let opts = Options::parse(kind, attr.clone())?;
    let mut f: syn::ItemFn = syn::parse2(item.clone()).map_err(|_| {
        syn::Error::new(
            item.span(),
            format!(
                "{} goes on a function, or on a method inside a `#[server]` impl block",
                kind.attr()
            ),
        )
    })?;
    let handler = param::analyze(&mut f.sig, kind, false)?;
    let k = krate(opts.krate.as_ref());
    let cx = Cx {
        k: k.clone(),
        owner: Owner::Free,
    };
    let ident = f.sig.ident.clone();
    let vis = f.vis.clone();
    let sig = f.sig.clone();
    let it = Item {
        handler,
        opts,
        doc: docs::doc_text(&f.attrs),
        sig: &sig,
    };
    let (suffix, ty, def) = match kind {
        Kind::Tool => (
            "tool",
            quote!(#k::__private::ToolDef),
            expand::tool_def(&cx, &it),
        ),
        Kind::Prompt => (
            "prompt",
            quote!(#k::__private::PromptDef),
            expand::prompt_def(&cx, &it),
        ),
        Kind::Resource => {
            let (uri, is_template) = expand::resource_uri(&it, attr.span())?;
            let ty = if is_template {
                quote!(#k::__private::TemplateDef)
            } else {
                quote!(#k::__private::ResourceDef)
            };
            (
                "resource",
                ty,
                expand::resource_def(&cx, &it, &uri, is_template),
            )
        }
    };
    let companion = format_ident!("{}_{suffix}", ident.to_string().trim_start_matches("r#"));
    let doc = format!(
        " The {} definition of [`{ident}`], for `ServerBuilder`.",
        kind.attr()
    );
    Ok(quote! {
        #f
        #[doc = #doc]
        #vis fn #companion() -> #ty #def
    })
}
