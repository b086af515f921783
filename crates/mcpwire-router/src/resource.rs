//! Native resources and resource templates.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use base64::Engine;
use mcpwire_model::McpError;
use mcpwire_model::types::{Annotations, Icon, Resource, ResourceContents, ResourceTemplate};

use crate::{BoxFuture, CallCtx, UriTemplate};

type ReadFn = dyn Fn(CallCtx, String) -> BoxFuture<'static, Result<Vec<ResourceContents>, McpError>>
    + Send
    + Sync;
type TemplateReadFn = dyn Fn(
        CallCtx,
        String,
        BTreeMap<String, String>,
    ) -> BoxFuture<'static, Result<Vec<ResourceContents>, McpError>>
    + Send
    + Sync;
/// Suggests values for an argument from what was typed and the other arguments' values.
pub(crate) type Completer = dyn Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync;

/// A resource with a fixed URI.
#[derive(Clone)]
pub struct ResourceDef {
    pub(crate) resource: Resource,
    pub(crate) read: Arc<ReadFn>,
}

impl fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceDef")
            .field("resource", &self.resource)
            .finish()
    }
}

impl ResourceDef {
    /// A resource read by `f(ctx, uri)`.
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, f: F) -> ResourceDef
    where
        F: Fn(CallCtx, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, McpError>> + Send + 'static,
    {
        ResourceDef {
            resource: Resource {
                uri: uri.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                size: None,
                annotations: None,
                icons: None,
                meta: None,
            },
            read: Arc::new(move |ctx, uri| Box::pin(f(ctx, uri))),
        }
    }

    /// A resource whose contents are this fixed text.
    pub fn text(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime: impl Into<String>,
        text: impl Into<String>,
    ) -> ResourceDef {
        let uri = uri.into();
        let mime = mime.into();
        let contents = ResourceContents::text(uri.clone(), mime.clone(), text);
        ResourceDef::new(uri, name, move |_, _| {
            let c = contents.clone();
            async move { Ok(vec![c]) }
        })
        .mime_type(mime)
    }

    /// A resource whose contents are these fixed bytes (sent base64-encoded).
    pub fn blob(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime: impl Into<String>,
        bytes: &[u8],
    ) -> ResourceDef {
        let uri = uri.into();
        let mime = mime.into();
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        let contents = ResourceContents::blob(uri.clone(), mime.clone(), b64);
        let size = bytes.len() as u64;
        let mut def = ResourceDef::new(uri, name, move |_, _| {
            let c = contents.clone();
            async move { Ok(vec![c]) }
        })
        .mime_type(mime);
        def.resource.size = Some(size);
        def
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.resource.description = Some(d.into());
        self
    }

    /// Sets the display title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.resource.title = Some(t.into());
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        self.resource.mime_type = Some(m.into());
        self
    }

    /// Sets annotations.
    pub fn annotations(mut self, a: Annotations) -> Self {
        self.resource.annotations = Some(a);
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.resource.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// The definition as listed.
    pub fn definition(&self) -> &Resource {
        &self.resource
    }
}

/// A family of resources matched by a URI template.
#[derive(Clone)]
pub struct TemplateDef {
    pub(crate) template: ResourceTemplate,
    pub(crate) matcher: UriTemplate,
    pub(crate) read: Arc<TemplateReadFn>,
    pub(crate) completers: BTreeMap<String, Arc<Completer>>,
}

impl fmt::Debug for TemplateDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TemplateDef")
            .field("template", &self.template)
            .finish()
    }
}

impl TemplateDef {
    /// A template read by `f(ctx, uri, variables)`.
    ///
    /// # Panics
    /// If `uri_template` is malformed (a programming error caught at registration).
    pub fn new<F, Fut>(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        f: F,
    ) -> TemplateDef
    where
        F: Fn(CallCtx, String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, McpError>> + Send + 'static,
    {
        let uri_template = uri_template.into();
        let matcher = UriTemplate::parse(&uri_template)
            .unwrap_or_else(|e| panic!("invalid URI template: {e}"));
        TemplateDef {
            template: ResourceTemplate {
                uri_template,
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                annotations: None,
                icons: None,
            },
            matcher,
            read: Arc::new(move |ctx, uri, vars| Box::pin(f(ctx, uri, vars))),
            completers: BTreeMap::new(),
        }
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.template.description = Some(d.into());
        self
    }

    /// Sets the display title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.template.title = Some(t.into());
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        self.template.mime_type = Some(m.into());
        self
    }

    /// Completes the template variable `var` with `f(typed, context)`.
    pub fn complete(
        mut self,
        var: impl Into<String>,
        f: impl Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completers.insert(var.into(), Arc::new(f));
        self
    }

    /// The definition as listed.
    pub fn definition(&self) -> &ResourceTemplate {
        &self.template
    }
}
