//! `#[server]` on an impl block: its `#[tool]`, `#[prompt]` and `#[resource]` methods become
//! one `Handlers` implementation.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{FnArg, ImplItem, ItemImpl, Meta};

use crate::docs::doc_text;
use crate::expand::{self, Cx, Item, Owner};
use crate::options::{Kind, Options, ServerOptions, krate};
use crate::param::analyze;

/// The handler kind an attribute names (`tool`, `mcpwire::prompt`, …), if any.
fn kind_of(attr: &syn::Attribute) -> Option<Kind> {
    let last = attr.path().segments.last()?;
    Kind::of_ident(&last.ident.to_string())
}

/// The attribute's argument tokens (`#[tool]` has none).
fn attr_tokens(attr: &syn::Attribute) -> syn::Result<TokenStream> {
    match &attr.meta {
        Meta::Path(_) => Ok(TokenStream::new()),
        Meta::List(l) => Ok(l.tokens.clone()),
        Meta::NameValue(nv) => Err(syn::Error::new(
            nv.span(),
            "write the arguments in parentheses, e.g. `#[tool(name = \"x\")]`",
        )),
    }
}

pub fn expand(opts: ServerOptions, mut block: ItemImpl) -> syn::Result<TokenStream> {
    if let Some((_, path, _)) = &block.trait_ {
        return Err(syn::Error::new(
            path.span(),
            "#[server] goes on an inherent impl block (`impl MyServer { .. }`), not on a trait impl",
        ));
    }
    let k = krate(opts.krate.as_ref());
    let methods: HashMap<String, (bool, usize)> = block
        .items
        .iter()
        .filter_map(|i| match i {
            ImplItem::Fn(f) => {
                let has_self = matches!(f.sig.inputs.first(), Some(FnArg::Receiver(_)));
                let n = f.sig.inputs.len() - usize::from(has_self);
                Some((f.sig.ident.to_string(), (has_self, n)))
            }
            _ => None,
        })
        .collect();
    let cx = Cx {
        k: k.clone(),
        owner: Owner::Server { methods: &methods },
    };
    let mut registrations = Vec::new();
    // The paths of the attributes taken off the methods: referred to once so that an import
    // of them (`use mcpwire::{server, tool}`) counts as used.
    let mut used_paths: Vec<syn::Path> = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut push_err = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for item in block.items.iter_mut() {
        let ImplItem::Fn(f) = item else { continue };
        let ours: Vec<(usize, Kind)> = f
            .attrs
            .iter()
            .enumerate()
            .filter_map(|(i, a)| kind_of(a).map(|k| (i, k)))
            .collect();
        let Some(&(index, kind)) = ours.first() else {
            continue;
        };
        if ours.len() > 1 {
            push_err(syn::Error::new(
                f.attrs[ours[1].0].span(),
                "a method is one tool, prompt or resource: keep one of these attributes",
            ));
            continue;
        }
        let attr = f.attrs.remove(index);
        used_paths.push(attr.path().clone());
        let result = attr_tokens(&attr)
            .and_then(|t| Options::parse(kind, t))
            .and_then(|opts| {
                let handler = analyze(&mut f.sig, kind, true)?;
                let item = Item {
                    handler,
                    opts,
                    doc: doc_text(&f.attrs),
                    sig: &f.sig,
                };
                Ok(match kind {
                    Kind::Tool => {
                        let def = expand::tool_def(&cx, &item);
                        quote!(let builder = builder.tool(#def);)
                    }
                    Kind::Prompt => {
                        let def = expand::prompt_def(&cx, &item);
                        quote!(let builder = builder.prompt(#def);)
                    }
                    Kind::Resource => {
                        let (uri, is_template) = expand::resource_uri(&item, attr.span())?;
                        let def = expand::resource_def(&cx, &item, &uri, is_template);
                        if is_template {
                            quote!(let builder = builder.template(#def);)
                        } else {
                            quote!(let builder = builder.resource(#def);)
                        }
                    }
                })
            });
        match result {
            Ok(r) => registrations.push(r),
            Err(e) => {
                crate::param::strip_helpers(&mut f.sig);
                push_err(e)
            }
        }
    }
    if let Some(e) = errors {
        let block_tokens = quote!(#block);
        let e = e.to_compile_error();
        return Ok(quote!(#block_tokens #e));
    }
    let self_ty = &block.self_ty;
    let (impl_generics, _, where_clause) = block.generics.split_for_impl();
    used_paths.sort_by_key(|p| quote!(#p).to_string());
    used_paths.dedup_by_key(|p| quote!(#p).to_string());
    Ok(quote! {
        #block
        const _: () = {
            #(#[allow(unused_imports)] use #used_paths as _;)*
        };
        impl #impl_generics #k::__private::Handlers for #self_ty #where_clause {
            fn register(
                self: ::std::sync::Arc<Self>,
                builder: #k::__private::ServerBuilder,
            ) -> #k::__private::ServerBuilder {
                #(#registrations)*
                builder
            }
        }
    })
}
