//! The definitions the macros generate: one block expression per handler that builds a
//! `ToolDef`, `PromptDef`, `ResourceDef` or `TemplateDef` calling the handler.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{LitStr, ReturnType, Signature};

use crate::options::{Kind, Options, lit};
use crate::param::{Complete, Handler, Param, Receiver, option_inner};
use crate::template;

/// Where the handler lives.
pub enum Owner<'a> {
    /// A free function (`#[tool] fn`): the definition is built by a companion function.
    Free,
    /// A method of a `#[server]` impl block: the definition is built inside
    /// `Handlers::register`, where `self` is an `Arc<Self>`. `methods` maps each method name
    /// of the block to its parameter count without the receiver, if it has `&self`.
    Server {
        methods: &'a HashMap<String, (bool, usize)>,
    },
}

/// What every generator needs.
pub struct Cx<'a> {
    /// The crate path whose `__private` module is called.
    pub k: TokenStream,
    pub owner: Owner<'a>,
}

/// A handler to generate for.
pub struct Item<'a> {
    pub handler: Handler,
    pub opts: Options,
    pub doc: Option<String>,
    pub sig: &'a Signature,
}

impl Item<'_> {
    fn name(&self) -> LitStr {
        self.opts
            .name
            .clone()
            .unwrap_or_else(|| lit(self.handler.ident.to_string().trim_start_matches("r#")))
    }

    fn description(&self) -> Option<LitStr> {
        self.opts
            .description
            .clone()
            .or_else(|| self.doc.as_deref().map(lit))
    }

    /// Where errors about the return type point.
    fn ret_span(&self) -> Span {
        match &self.sig.output {
            ReturnType::Type(_, ty) => ty.span(),
            ReturnType::Default => self.sig.ident.span(),
        }
    }
}

/// `tokens` with every span set to `span`, so that a trait error in generated code points
/// at the user's return type rather than at the attribute.
fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut t| {
            if let proc_macro2::TokenTree::Group(g) = &t {
                let mut ng = proc_macro2::Group::new(g.delimiter(), respan(&g.stream(), span));
                ng.set_span(span);
                return proc_macro2::TokenTree::Group(ng);
            }
            t.set_span(span);
            t
        })
        .collect()
}

fn uses_this(cx: &Cx, h: &Handler) -> bool {
    matches!(cx.owner, Owner::Server { .. }) && h.receiver == Receiver::Ref
}

/// `let __mcpwire_this = Arc::clone(&self);` where the handler needs the server value.
fn capture_this(cx: &Cx, h: &Handler) -> TokenStream {
    if uses_this(cx, h) {
        quote!(let __mcpwire_this = ::std::sync::Arc::clone(&self);)
    } else {
        TokenStream::new()
    }
}

fn reclone_this(cx: &Cx, h: &Handler) -> TokenStream {
    if uses_this(cx, h) {
        quote!(let __mcpwire_this = ::std::sync::Arc::clone(&__mcpwire_this);)
    } else {
        TokenStream::new()
    }
}

/// The call of the handler with `args`, awaited if it is async.
fn call(cx: &Cx, h: &Handler, args: &[TokenStream]) -> TokenStream {
    let f = &h.ident;
    let call = match (&cx.owner, h.receiver) {
        (Owner::Server { .. }, Receiver::Ref) => quote!(__mcpwire_this.#f(#(#args),*)),
        (Owner::Server { .. }, Receiver::None) => quote!(Self::#f(#(#args),*)),
        (Owner::Free, _) => quote!(#f(#(#args),*)),
    };
    if h.is_async {
        quote!(#call.await)
    } else {
        call
    }
}

/// The arguments of the call: the context where the handler takes one, `args` for
/// `#[args]`, each named parameter by its identifier.
fn call_args(h: &Handler) -> Vec<TokenStream> {
    h.params
        .iter()
        .map(|p| match p {
            Param::Ctx { by_ref: true } => quote!(&__mcpwire_ctx),
            Param::Ctx { by_ref: false } => quote!(__mcpwire_ctx),
            Param::Args { .. } => quote!(__mcpwire_args),
            Param::Named(n) => {
                let i = &n.ident;
                quote!(#i)
            }
        })
        .collect()
}

/// `ToolDef` for a `#[tool]` handler.
pub fn tool_def(cx: &Cx, item: &Item) -> TokenStream {
    let k = &cx.k;
    let h = &item.handler;
    let name = item.name();
    let whole = h.params.iter().find_map(|p| match p {
        Param::Args { ty } => Some(ty.clone()),
        _ => None,
    });
    let (args_struct, args_ty, destructure) = match whole {
        Some(ty) => (TokenStream::new(), quote!(#ty), TokenStream::new()),
        None => {
            let serde = format!("{}", quote!(#k::__private::serde));
            let schemars = format!("{}", quote!(#k::__private::schemars));
            let fields = h.named().map(|n| {
                let (i, t, d, f) = (&n.ident, &n.ty, &n.docs, &n.forward);
                quote!(#(#d)* #(#f)* #i: #t,)
            });
            let idents = h.named().map(|n| &n.ident);
            (
                quote! {
                    #[derive(#k::__private::serde::Deserialize, #k::__private::schemars::JsonSchema)]
                    #[serde(crate = #serde)]
                    #[schemars(crate = #schemars)]
                    struct __McpwireArgs { #(#fields)* }
                },
                quote!(__McpwireArgs),
                quote!(let __McpwireArgs { #(#idents),* } = __mcpwire_args;),
            )
        }
    };
    let call = call(cx, h, &call_args(h));
    // `tool_output` bounds the handler's return type once, so a type that is not a tool
    // result gets one error (naming the type and what is accepted).
    let capture = capture_this(cx, h);
    let reclone = reclone_this(cx, h);
    let mut chain = Vec::new();
    if let Some(d) = item.description() {
        chain.push(quote!(let def = def.description(#d);));
    }
    let o = &item.opts;
    if let Some(t) = &o.title {
        chain.push(quote!(let def = def.title(#t);));
    }
    let hints = [
        ("read_only_hint", o.read_only),
        ("destructive_hint", o.destructive),
        ("idempotent_hint", o.idempotent),
        ("open_world_hint", o.open_world),
    ];
    for (field, value) in hints {
        if let Some(v) = value {
            let field = format_ident!("{field}");
            chain.push(quote!(let def = #k::__private::annotate(def, |a| a.#field = ::std::option::Option::Some(#v));));
        }
    }
    if let Some(t) = &o.task_support {
        let variant = match t.value().as_str() {
            "optional" => quote!(Optional),
            "required" => quote!(Required),
            _ => quote!(Forbidden),
        };
        chain.push(quote!(let def = def.task_support(#k::__private::TaskSupport::#variant);));
    }
    quote! {{
        #args_struct
        #capture
        let def = #k::__private::tool_output(#name, move |__mcpwire_ctx: #k::__private::CallCtx, __mcpwire_args: #args_ty| {
            #reclone
            async move {
                #destructure
                #call
            }
        });
        #(#chain)*
        def
    }}
}

/// The completer expression for `c`.
fn completer(cx: &Cx, c: &Complete) -> TokenStream {
    let k = &cx.k;
    match c {
        Complete::Values(v) => quote!(#k::__private::complete_from(&[#(#v),*])),
        Complete::Path(p) => {
            if let (Owner::Server { methods }, Some(ident)) = (&cx.owner, p.get_ident())
                && let Some(&(true, arity)) = methods.get(&ident.to_string())
            {
                let call = if arity >= 2 {
                    quote!(move |typed: &str, context: &::std::collections::BTreeMap<::std::string::String, ::std::string::String>| __mcpwire_this.#ident(typed, context))
                } else {
                    quote!(move |typed: &str| __mcpwire_this.#ident(typed))
                };
                return quote! {{
                    let __mcpwire_this = ::std::sync::Arc::clone(&self);
                    #k::__private::completer(#call)
                }};
            }
            quote!(#k::__private::completer(#p))
        }
    }
}

/// Statements binding each named parameter from a string map with `getter(map, name)`.
fn bind_strings(cx: &Cx, h: &Handler, kind: Kind) -> Vec<TokenStream> {
    let k = &cx.k;
    h.named()
        .map(|n| {
            let (i, t, w) = (&n.ident, &n.ty, &n.wire_name);
            let get = match (kind, option_inner(t)) {
                (Kind::Prompt, Some(inner)) => {
                    quote!(#k::__private::prompt_arg_opt::<#inner>(&__mcpwire_args, #w))
                }
                (Kind::Prompt, None) => {
                    quote!(#k::__private::prompt_arg::<#t>(&__mcpwire_args, #w))
                }
                _ => quote!(#k::__private::template_var::<#t>(&__mcpwire_vars, #w, &__mcpwire_uri)),
            };
            quote_spanned! {t.span()=>
                let #i: #t = match #get {
                    ::std::result::Result::Ok(v) => v,
                    ::std::result::Result::Err(e) => return ::std::result::Result::Err(e),
                };
            }
        })
        .collect()
}

/// `PromptDef` for a `#[prompt]` handler.
pub fn prompt_def(cx: &Cx, item: &Item) -> TokenStream {
    let k = &cx.k;
    let h = &item.handler;
    let name = item.name();
    let binds = bind_strings(cx, h, Kind::Prompt);
    let call = call(cx, h, &call_args(h));
    let ks = respan(k, item.ret_span());
    let out = proc_macro2::Ident::new("__mcpwire_out", item.ret_span());
    let output = quote_spanned!(item.ret_span()=> {
        let #out = #call;
        #ks::__private::IntoPromptOutput::into_prompt_output(#out)
    });
    let capture = capture_this(cx, h);
    let reclone = reclone_this(cx, h);
    let mut chain = Vec::new();
    if let Some(d) = item.description() {
        chain.push(quote!(let def = def.description(#d);));
    }
    if let Some(t) = &item.opts.title {
        chain.push(quote!(let def = def.title(#t);));
    }
    for n in h.named() {
        let w = &n.wire_name;
        let required = option_inner(&n.ty).is_none();
        let desc = match &n.doc_text {
            Some(d) => quote!(::std::option::Option::Some(#d)),
            None => quote!(::std::option::Option::None),
        };
        chain.push(quote!(let def = #k::__private::prompt_argument(def, #w, #desc, #required);));
        if let Some(c) = &n.complete {
            let c = completer(cx, c);
            chain.push(quote!(let def = #k::__private::complete_prompt(def, #w, #c);));
        }
    }
    quote! {{
        #capture
        let def = #k::__private::PromptDef::new(#name, move |__mcpwire_ctx: #k::__private::CallCtx, __mcpwire_args: ::std::collections::BTreeMap<::std::string::String, ::std::string::String>| {
            #reclone
            async move {
                #(#binds)*
                #output
            }
        });
        #(#chain)*
        def
    }}
}

/// Whether a `#[resource]` is a template, and the checked URI; errors name the fix.
pub fn resource_uri(item: &Item, attr_span: Span) -> syn::Result<(LitStr, bool)> {
    let Some(uri) = item.opts.uri.clone() else {
        return Err(syn::Error::new(
            attr_span,
            "#[resource] needs a URI: `#[resource(\"scheme://path\")]`, or a template such as \
             `#[resource(\"notes://{id}\")]` whose variables are the function's parameters",
        ));
    };
    let vars = template::variables(&uri.value()).map_err(|e| syn::Error::new(uri.span(), e))?;
    for n in item.handler.named() {
        if !vars.contains(&n.wire_name) {
            let msg = if vars.is_empty() {
                format!(
                    "`{}` is not a variable of the URI {:?}: a fixed resource takes no \
                     arguments; add `{{{}}}` to the URI to make it a template",
                    n.wire_name,
                    uri.value(),
                    n.wire_name
                )
            } else {
                format!(
                    "`{}` is not a variable of the URI template {:?}: name the parameter after \
                     one of {}",
                    n.wire_name,
                    uri.value(),
                    vars.iter()
                        .map(|v| format!("`{v}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(syn::Error::new(n.ident.span(), msg));
        }
    }
    Ok((uri, !vars.is_empty()))
}

/// `ResourceDef` or `TemplateDef` for a `#[resource]` handler whose URI was checked.
pub fn resource_def(cx: &Cx, item: &Item, uri: &LitStr, is_template: bool) -> TokenStream {
    let k = &cx.k;
    let h = &item.handler;
    let name = item.name();
    let call = call(cx, h, &call_args(h));
    let mime = match &item.opts.mime {
        Some(m) => quote!(::std::option::Option::Some(#m)),
        None => quote!(::std::option::Option::None),
    };
    let ks = respan(k, item.ret_span());
    let out = proc_macro2::Ident::new("__mcpwire_out", item.ret_span());
    let output = quote_spanned!(item.ret_span()=> {
        let #out = #call;
        #ks::__private::IntoResourceOutput::into_resource_output(#out, &__mcpwire_uri, #mime)
    });
    let capture = capture_this(cx, h);
    let reclone = reclone_this(cx, h);
    let mut chain = Vec::new();
    if let Some(d) = item.description() {
        chain.push(quote!(let def = def.description(#d);));
    }
    if let Some(t) = &item.opts.title {
        chain.push(quote!(let def = def.title(#t);));
    }
    if let Some(m) = &item.opts.mime {
        chain.push(quote!(let def = def.mime_type(#m);));
    }
    let def = if is_template {
        let binds = bind_strings(cx, h, Kind::Resource);
        for n in h.named() {
            if let Some(c) = &n.complete {
                let (w, c) = (&n.wire_name, completer(cx, c));
                chain.push(quote!(let def = #k::__private::complete_template(def, #w, #c);));
            }
        }
        quote! {
            #k::__private::TemplateDef::new(#uri, #name, move |__mcpwire_ctx: #k::__private::CallCtx, __mcpwire_uri: ::std::string::String, __mcpwire_vars: ::std::collections::BTreeMap<::std::string::String, ::std::string::String>| {
                #reclone
                async move {
                    #(#binds)*
                    #output
                }
            })
        }
    } else {
        quote! {
            #k::__private::ResourceDef::new(#uri, #name, move |__mcpwire_ctx: #k::__private::CallCtx, __mcpwire_uri: ::std::string::String| {
                #reclone
                async move { #output }
            })
        }
    };
    quote! {{
        #capture
        let def = #def;
        #(#chain)*
        def
    }}
}
