//! Reading a handler's signature: its receiver, its `CallCtx`, and its named parameters
//! with their docs, forwarded attributes and completions.

use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, GenericArgument, Ident, LitStr, Pat, Path, PathArguments, Signature, Type,
};

use crate::docs::doc_text;
use crate::options::Kind;

/// How a handler is reached.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Receiver {
    /// A free function or an associated function without `self`.
    None,
    /// `&self`.
    Ref,
}

/// What fills a completion.
pub enum Complete {
    /// `#[complete("a", "b")]`: fixed values, filtered by what was typed.
    Values(Vec<LitStr>),
    /// `#[complete(path)]`: a function, or a method of the `#[server]` value.
    Path(Path),
}

/// A parameter that is one argument of the tool, prompt or template.
pub struct Named {
    pub ident: Ident,
    pub ty: Type,
    /// The parameter's doc attributes (forwarded to the generated field).
    pub docs: Vec<Attribute>,
    pub doc_text: Option<String>,
    /// `#[serde(..)]` / `#[schemars(..)]` attributes (tools only).
    pub forward: Vec<Attribute>,
    /// The argument's name on the wire (`#[serde(rename = "..")]` or the identifier).
    pub wire_name: String,
    pub complete: Option<Complete>,
}

/// One parameter of a handler.
pub enum Param {
    Ctx {
        by_ref: bool,
    },
    /// `#[args] x: T`: the whole argument object.
    Args {
        ty: Box<Type>,
    },
    Named(Box<Named>),
}

/// A handler's signature as the generators need it.
pub struct Handler {
    pub ident: Ident,
    pub receiver: Receiver,
    pub is_async: bool,
    pub params: Vec<Param>,
}

impl Handler {
    pub fn named(&self) -> impl Iterator<Item = &Named> {
        self.params.iter().filter_map(|p| match p {
            Param::Named(n) => Some(&**n),
            _ => None,
        })
    }
}

fn err<T>(span: proc_macro2::Span, msg: impl std::fmt::Display) -> syn::Result<T> {
    Err(syn::Error::new(span, msg))
}

/// Whether `ty` is `CallCtx` or a reference to it; `Some(by_ref)` if so.
fn ctx_type(ty: &Type) -> Option<bool> {
    match ty {
        Type::Reference(r) => ctx_type(&r.elem).map(|_| true),
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .filter(|s| s.ident == "CallCtx")
            .map(|_| false),
        _ => None,
    }
}

/// `T` if `ty` is `Option<T>`.
pub fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(a) = &seg.arguments else {
        return None;
    };
    match a.args.first()? {
        GenericArgument::Type(t) if a.args.len() == 1 => Some(t),
        _ => None,
    }
}

fn is_attr(a: &Attribute, name: &str) -> bool {
    a.path().is_ident(name)
}

/// `#[serde(rename = "x")]` in `attrs`, if any.
fn serde_rename(attrs: &[Attribute]) -> syn::Result<Option<String>> {
    let mut found = None;
    for a in attrs.iter().filter(|a| is_attr(a, "serde")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("rename") {
                found = Some(m.value()?.parse::<LitStr>()?.value());
            } else if m.input.peek(syn::Token![=]) {
                let _: syn::Expr = m.value()?.parse()?;
            } else if m.input.peek(syn::token::Paren) {
                let _group: proc_macro2::Group = m.input.parse()?;
            }
            Ok(())
        })?;
    }
    Ok(found)
}

fn parse_complete(a: &Attribute) -> syn::Result<Complete> {
    a.parse_args_with(|input: syn::parse::ParseStream| {
        if input.peek(LitStr) {
            let values = input.parse_terminated(|i| i.parse::<LitStr>(), syn::Token![,])?;
            Ok(Complete::Values(values.into_iter().collect()))
        } else {
            Ok(Complete::Path(input.parse()?))
        }
    })
}

/// Reads `sig` as a `kind` handler, removing the parameter attributes it consumes (doc
/// comments, `#[args]`, `#[complete]`, `#[serde]`, `#[schemars]`) so the function compiles
/// as written.
pub fn analyze(sig: &mut Signature, kind: Kind, in_server: bool) -> syn::Result<Handler> {
    let what = kind.attr();
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return err(
            sig.generics.span(),
            format!(
                "a {what} function cannot be generic: its schema is fixed when it is registered; \
                 use concrete types"
            ),
        );
    }
    if let Some(v) = &sig.variadic {
        return err(v.span(), "variadic functions cannot be handlers");
    }
    let mut receiver = Receiver::None;
    let mut params = Vec::new();
    let mut ctx_seen = false;
    for arg in sig.inputs.iter_mut() {
        match arg {
            FnArg::Receiver(r) => {
                if !in_server {
                    return err(
                        r.span(),
                        format!(
                            "a method becomes a {what} through its impl block: put `#[server]` \
                             on the `impl` block (and keep `{what}` on the method)"
                        ),
                    );
                }
                if r.reference.is_none() || r.colon_token.is_some() {
                    return err(
                        r.span(),
                        format!(
                            "a {what} method takes `&self`: the server shares one value between \
                             concurrent calls"
                        ),
                    );
                }
                if r.mutability.is_some() {
                    return err(
                        r.span(),
                        format!(
                            "a {what} method takes `&self`, not `&mut self`: calls run \
                             concurrently, so keep what changes behind a `Mutex` or `RwLock`"
                        ),
                    );
                }
                receiver = Receiver::Ref;
            }
            FnArg::Typed(pt) => {
                let mut docs = Vec::new();
                let mut forward = Vec::new();
                let mut complete = None;
                let mut whole = false;
                let mut keep = Vec::new();
                for a in pt.attrs.drain(..) {
                    if is_attr(&a, "doc") {
                        docs.push(a);
                    } else if is_attr(&a, "serde") || is_attr(&a, "schemars") {
                        forward.push(a);
                    } else if is_attr(&a, "args") {
                        whole = true;
                    } else if is_attr(&a, "complete") {
                        complete = Some((a.span(), parse_complete(&a)?));
                    } else {
                        keep.push(a);
                    }
                }
                pt.attrs = keep;
                if let Some(by_ref) = ctx_type(&pt.ty) {
                    if ctx_seen {
                        return err(pt.span(), "a handler takes at most one `CallCtx`");
                    }
                    ctx_seen = true;
                    params.push(Param::Ctx { by_ref });
                    continue;
                }
                if let Some((span, _)) = &complete
                    && kind == Kind::Tool
                {
                    return err(
                        *span,
                        "#[complete] completes prompt arguments and resource template variables; \
                         tool arguments have no completions (describe allowed values with an enum)",
                    );
                }
                if whole {
                    if kind != Kind::Tool {
                        return err(
                            pt.span(),
                            format!(
                                "#[args] is for tools; {what} arguments are strings, one parameter each"
                            ),
                        );
                    }
                    params.push(Param::Args { ty: pt.ty.clone() });
                    continue;
                }
                let ident = match &*pt.pat {
                    Pat::Ident(p) if p.subpat.is_none() => p.ident.clone(),
                    other => {
                        return err(
                            other.span(),
                            format!(
                                "name this parameter: {what} arguments are named after their \
                                 parameters (or mark a parameter taking the whole argument \
                                 struct with `#[args]`)"
                            ),
                        );
                    }
                };
                check_owned(&pt.ty, what)?;
                if kind != Kind::Tool
                    && let Some(a) = forward.iter().find(|a| !is_attr(a, "serde"))
                {
                    return err(
                        a.span(),
                        format!("only `#[serde(rename = \"..\")]` applies to {what} arguments"),
                    );
                }
                let wire_name = match serde_rename(&forward)? {
                    Some(n) => n,
                    None => ident.to_string().trim_start_matches("r#").to_owned(),
                };
                params.push(Param::Named(Box::new(Named {
                    doc_text: doc_text(&docs),
                    ident,
                    ty: (*pt.ty).clone(),
                    docs,
                    forward,
                    wire_name,
                    complete: complete.map(|(_, c)| c),
                })));
            }
        }
    }
    let n_whole = params
        .iter()
        .filter(|p| matches!(p, Param::Args { .. }))
        .count();
    let n_named = params
        .iter()
        .filter(|p| matches!(p, Param::Named(_)))
        .count();
    if n_whole > 1 || (n_whole == 1 && n_named > 0) {
        return err(
            sig.inputs.span(),
            "`#[args]` takes the whole argument object: move the other parameters into its \
             struct's fields, or drop `#[args]` and list the arguments as parameters",
        );
    }
    Ok(Handler {
        ident: sig.ident.clone(),
        receiver,
        is_async: sig.asyncness.is_some(),
        params,
    })
}

/// Removes the parameter attributes only the macros understand (after an error, so the
/// compiler reports the error and nothing about unknown attributes).
pub fn strip_helpers(sig: &mut Signature) {
    for arg in sig.inputs.iter_mut() {
        if let FnArg::Typed(pt) = arg {
            pt.attrs.retain(|a| {
                !["doc", "serde", "schemars", "args", "complete"]
                    .iter()
                    .any(|n| is_attr(a, n))
            });
        }
    }
}

/// Refuses borrowed and `impl Trait` argument types, which cannot be deserialized into.
fn check_owned(ty: &Type, what: &str) -> syn::Result<()> {
    match ty {
        Type::Reference(r) => {
            let hint = match &*r.elem {
                Type::Path(p) if p.path.is_ident("str") => "take `String` instead of `&str`",
                Type::Slice(_) => "take a `Vec<_>` instead of a slice",
                _ => "take the value instead of a reference",
            };
            err(
                r.span(),
                format!("{what} arguments are parsed into owned values: {hint}"),
            )
        }
        Type::ImplTrait(i) => err(
            i.span(),
            format!(
                "{what} arguments need a concrete type (the schema is derived from it), not `impl Trait`"
            ),
        ),
        _ => Ok(()),
    }
}
